"""Time of ``skyc validate examples/train-a100.yaml`` as a whole process.

Prints the median wall time and the median CPU time (user + sys of the child, from
``os.wait4``) of N runs (default 15). Exits 1 when the wall median is above the
budget (0.3 s) -- or the CPU median, with ``--budget-cpu``: the steadier figure on
a machine that other work keeps busy -- or when validating imports a heavy
library (pulp, asyncssh, boto3, pulumi, rich) that only later stages need.

Timing as in ``_timing``: as installed, after one untimed warm-up run.

    python benchmarks/bench_validate.py [--runs N] [--budget SECONDS] [--budget-cpu]
"""

from __future__ import annotations

import subprocess
import sys

from _timing import (
    ROOT,
    bench_env,
    budget_args,
    load_average,
    over_budget,
    skyc_command,
    time_runs,
)

TASK = "examples/train-a100.yaml"
HEAVY = ("pulp", "asyncssh", "boto3", "botocore", "pulumi", "rich")


def heavy_imports() -> list[str]:
    """Top-level packages from HEAVY that ``skyc validate`` imports (``-X importtime``)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "skyc", "validate", TASK],
        cwd=ROOT, capture_output=True, text=True,
    )
    found = set()
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            name = line.rsplit("|", 1)[1].strip().split(".")[0]
            if name in HEAVY:
                found.add(name)
    return sorted(found)


def main() -> int:
    args = budget_args(__doc__.splitlines()[0], 0.3)
    times = time_runs(skyc_command("validate", TASK), bench_env(), args.runs)
    print(f"skyc validate {TASK}, {args.runs} runs: {times.summary()}; budget "
          f"{args.budget:.3f} s on {'CPU' if args.budget_cpu else 'wall'}; {load_average()}")
    failed = False
    heavy = heavy_imports()
    if heavy:
        print(f"FAIL: validate imports {', '.join(heavy)}")
        failed = True
    failure = over_budget(times, args.budget, args.budget_cpu)
    if failure:
        print(failure)
        failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
