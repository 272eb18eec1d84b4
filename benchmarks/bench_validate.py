"""Time of ``skyc validate examples/train-a100.yaml`` as a whole process.

Prints the median wall time and the median CPU time (user + sys of the child, from
``os.wait4``) of N runs (default 15). Exits 1 when the wall median is above the
budget (0.3 s) -- or the CPU median, with ``--budget-cpu``: the steadier figure on
a machine that other work keeps busy -- or when validating imports a heavy
library (pulp, asyncssh, boto3, pulumi, rich) that only later stages need.

Runs measure skyc as installed: with bytecode caches (``pip install`` compiles
them). The child's environment drops PYTHONDONTWRITEBYTECODE and one untimed
warm-up run writes the caches; without them every module is compiled from
source on each run.

    python benchmarks/bench_validate.py [--runs N] [--budget SECONDS] [--budget-cpu]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TASK = "examples/train-a100.yaml"
HEAVY = ("pulp", "asyncssh", "boto3", "botocore", "pulumi", "rich")


def command() -> list[str]:
    """The installed console script next to this Python (not a version-manager shim,
    which adds its own start-up), else ``python -m skyc``."""
    beside = Path(sys.executable).parent / "skyc"
    exe = str(beside) if beside.exists() else shutil.which("skyc")
    return [exe, "validate", TASK] if exe else [sys.executable, "-m", "skyc", "validate", TASK]


def time_runs(runs: int) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds of each run."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    walls, cpus = [], []
    for i in range(runs + 1):  # the first run (untimed) writes bytecode caches
        start = time.perf_counter()
        proc = subprocess.Popen(command(), cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        assert proc.stderr is not None
        err = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
        wall, cpu = time.perf_counter() - start, usage.ru_utime + usage.ru_stime
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            sys.exit(f"skyc validate failed ({code}):\n{err}")
        if i:
            walls.append(wall)
            cpus.append(cpu)
    return walls, cpus


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
    parser.add_argument("--budget-cpu", action="store_true",
                        help="apply the budget to the CPU median instead of the wall median")
    args = parser.parse_args()
    walls, cpus = time_runs(args.runs)
    wall, cpu = statistics.median(walls), statistics.median(cpus)
    print(f"skyc validate {TASK}, {args.runs} runs: wall median {wall:.3f} s "
          f"(min {min(walls):.3f}, max {max(walls):.3f}); CPU median {cpu:.3f} s "
          f"(min {min(cpus):.3f}); budget {args.budget:.3f} s on "
          f"{'CPU' if args.budget_cpu else 'wall'}; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    failed = False
    heavy = heavy_imports()
    if heavy:
        print(f"FAIL: validate imports {', '.join(heavy)}")
        failed = True
    measured, kind = (cpu, "CPU") if args.budget_cpu else (wall, "wall")
    if measured > args.budget:
        print(f"FAIL: {kind} median {measured:.3f} s is over the budget of {args.budget:.3f} s")
        failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
