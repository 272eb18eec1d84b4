"""Optimizer speed on pipelines, with the bundled catalog (aws, gcp, azure):

- a chain of 50 tasks, each passing data on (dynamic programming): budget 1 s;
- a 12-task general DAG with ~20 placement options per task and ~20 edges
  (integer program, CBC): budget 5 s.

Prints medians; exits 1 when either is over its budget.

    python benchmarks/bench_dag.py [--runs N]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from skyc.catalog import load_catalog
from skyc.optimizer import optimize
from skyc.task.candidate import AcceleratorRequest, ResourceCandidate

# (accelerator, count): about 15-30 regions each in the bundled snapshot.
ASKS = [("A100", 8), ("T4", 8), ("A10G", 1), ("V100", 8), ("L4", 8), ("A10G", 8)]


@dataclass
class Task:
    cands: list[ResourceCandidate]
    name: str
    num_nodes: int = 1
    outputs: dict[str, float] = field(default_factory=dict)

    def candidates(self) -> list[ResourceCandidate]:
        return self.cands


def make_tasks(n: int, rng: random.Random) -> list[Task]:
    tasks = []
    for i in range(n):
        acc, count = ASKS[i % len(ASKS)]
        cand = ResourceCandidate(index=0, accelerator=AcceleratorRequest(name=acc, count=count))
        tasks.append(Task([cand], f"t{i}", outputs={"s3://b/o": rng.choice((10, 100, 1000))}))
    return tasks


def timed(fn: object, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return statistics.median(times)


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
    t_chain = timed(lambda: optimize(chain, cat), args.runs)
    t_dag = timed(lambda: optimize(dag, cat, edges=edges), args.runs)
    print(f"chain of 50 tasks: median {t_chain:.3f} s (budget 1 s)")
    print(f"DAG of 12 tasks, {len(edges)} edges: median {t_dag:.3f} s (budget 5 s)")
    return 0 if t_chain <= 1.0 and t_dag <= 5.0 else 1
if __name__ == "__main__":
    sys.exit(main())
