"""Optimizer speed when every task has a duration (the whole run is minimised: each
offer's hours for the task, scaled by the time model, then the same chain DP and DAG
integer program), beside the same pipelines ranked per hour; bundled catalog:

- a chain of 50 tasks, each passing data on: budget 1 s;
- a 12-task general DAG, ~20 edges: budget 5 s.

Prints medians; exits 1 when a run-cost plan is over its budget.

    python benchmarks/bench_run_cost.py [--runs N]
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_dag import make_tasks, timed
from skyc.catalog import load_catalog
from skyc.optimizer import optimize
from skyc.optimizer.pipeline_cost import StepDuration


def durations(n: int, rng: random.Random) -> list[StepDuration | None]:
    """Half measured on A100:8 (scaled per offer), half as given."""
    return [StepDuration(hours=rng.uniform(1, 40), given_as="h",
                         measured_on=("A100", 8.0) if i % 2 else None) for i in range(n)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    cat = load_catalog(clouds=["aws", "gcp", "azure"])
    cat.load_all()
    rng = random.Random(7)
    chain = make_tasks(50, rng)
    dag = make_tasks(12, rng)
    edges = sorted({(u, v) for u in range(12) for v in range(u + 1, 12) if rng.random() < 0.3})
    d_chain, d_dag = durations(50, rng), durations(12, rng)
    assert optimize(chain, cat, durations=d_chain).objective == "run"
    rows = [
        ("chain of 50, per hour", timed(lambda: optimize(chain, cat), args.runs), None),
        ("chain of 50, whole run",
         timed(lambda: optimize(chain, cat, durations=d_chain), args.runs), 1.0),
        (f"DAG of 12 ({len(edges)} edges), per hour",
         timed(lambda: optimize(dag, cat, edges=edges), args.runs), None),
        (f"DAG of 12 ({len(edges)} edges), whole run",
         timed(lambda: optimize(dag, cat, edges=edges, durations=d_dag), args.runs), 5.0),
    ]
    ok = True
    for name, seconds, budget in rows:
        over = budget is not None and seconds > budget
        ok = ok and not over
        limit = f" (budget {budget:g} s)" if budget is not None else ""
        print(f"{name}: median {seconds:.3f} s{limit}{' OVER' if over else ''}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
