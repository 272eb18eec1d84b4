"""Cost of the review outputs on ``skyc plan`` (one GPU task over aws, gcp and azure,
bundled catalog, ``--no-diff``): plain JSON, ``--format markdown`` (the comment
with the generated stack) and ``-o plan.skyc`` (the saved plan file, with digests
of every input), each as a whole process.

Prints the median wall and CPU time of N runs of each. Exits 1 when the markdown
or plan-file run's wall median is above the budget (0.8 s); with ``--budget-cpu``
the budget applies to the CPU medians.

    python benchmarks/bench_review.py [--runs N] [--budget SECONDS] [--budget-cpu]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from _timing import bench_env, budget_args, load_average, over_budget, skyc_command, time_runs

TASK = "name: train\nresources:\n  accelerators: A100:8\nrun: python train.py\n"


def main() -> int:
    args = budget_args(__doc__.splitlines()[0], 0.8)
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        (home / "config.yaml").write_text("infra: [aws, gcp, azure]\n")
        task = home / "task.yaml"
        task.write_text(TASK)
        base = ["plan", str(task), "--no-diff"]
        runs = {"json": [*base, "--format", "json"],
                "markdown": [*base, "--format", "markdown"],
                "plan file": [*base, "--format", "json", "-o", str(home / "plan.skyc")]}
        for label, cmd in runs.items():
            times = time_runs(skyc_command(*cmd), bench_env(SKYC_HOME=str(home)), args.runs)
            print(f"skyc plan {label} (A100:8 over aws, gcp, azure; --no-diff), "
                  f"{args.runs} runs: {times.summary()}")
            failure = over_budget(times, args.budget, args.budget_cpu)
            if failure and label != "json":
                failures.append(f"{label}: {failure}")
    print(load_average())
    for failure in failures:
        print(failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
