"""Time of ``skyc plan`` for the three-step example pipeline (examples/pipeline.yaml,
each step with its duration) over aws, gcp and azure (bundled catalog), as a whole
process, placement and run cost only (``--no-diff``), in JSON and as tables.

Prints the median wall time and the median CPU time (user + sys of the child, from
``os.wait4``) of N runs of each. Exits 1 when a wall median is above the budget
(0.8 s); with ``--budget-cpu`` the budget applies to the CPU medians instead, which
are the steadier figures on a machine that other work keeps busy.

Timing as in ``_timing``: as installed, after one untimed warm-up run.

    python benchmarks/bench_plan_pipeline.py [--runs N] [--budget SECONDS] [--budget-cpu]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from _timing import bench_env, budget_args, load_average, over_budget, skyc_command, time_runs

PIPELINE = Path(__file__).resolve().parents[1] / "examples" / "pipeline.yaml"


def main() -> int:
    args = budget_args(__doc__.splitlines()[0], 0.8)
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        (home / "config.yaml").write_text("infra: [aws, gcp, azure]\n")
        for fmt in ("json", "table"):
            cmd = skyc_command("plan", str(PIPELINE), "--format", fmt, "--no-diff")
            times = time_runs(cmd, bench_env(SKYC_HOME=str(home)), args.runs)
            print(f"skyc plan examples/pipeline.yaml (3 steps over aws, gcp, azure; --no-diff; "
                  f"--format {fmt}), {args.runs} runs: {times.summary()}; {load_average()}")
            failure = over_budget(times, args.budget, args.budget_cpu)
            if failure:
                failures.append(f"--format {fmt}: {failure}")
    for failure in failures:
        print(failure)
    if failures:
        return 1
    print(f"ok: {'CPU' if args.budget_cpu else 'wall'} medians within the budget of "
          f"{args.budget:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
