"""Wall time of ``skyc validate examples/train-a100.yaml`` as a whole process.

Prints the median of N runs (default 15) and exits 1 when it is above the
budget (0.3 s), or when validating imports a heavy library (pulp, asyncssh,
boto3, pulumi) that only later stages need.

    python benchmarks/bench_validate.py [--runs N] [--budget SECONDS]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TASK = "examples/train-a100.yaml"
HEAVY = ("pulp", "asyncssh", "boto3", "botocore", "pulumi")


def command() -> list[str]:
    """The installed console script next to this Python (not a version-manager shim,
    which adds its own start-up), else ``python -m skyc``."""
    beside = Path(sys.executable).parent / "skyc"
    exe = str(beside) if beside.exists() else shutil.which("skyc")
    return [exe, "validate", TASK] if exe else [sys.executable, "-m", "skyc", "validate", TASK]


def time_runs(runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(command(), cwd=ROOT, capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        if done.returncode != 0:
            sys.exit(f"skyc validate failed ({done.returncode}):\n{done.stderr}")
    return times


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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--budget", type=float, default=0.3)
    args = parser.parse_args()
    times = time_runs(args.runs)
    median = statistics.median(times)
    print(f"skyc validate {TASK}: median {median:.3f} s over {args.runs} runs "
          f"(min {min(times):.3f} s, max {max(times):.3f} s, budget {args.budget:.3f} s)")
    failed = False
    heavy = heavy_imports()
    if heavy:
        print(f"FAIL: validate imports {', '.join(heavy)}")
        failed = True
    if median > args.budget:
        print(f"FAIL: median {median:.3f} s is over the budget of {args.budget:.3f} s")
        failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
