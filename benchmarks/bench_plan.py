"""Time of ``skyc plan`` for one GPU task over aws, gcp and azure (bundled catalog),
as a whole process, placement only (``--no-diff``: the engine diff runs terraform).

Prints the median wall time and the median CPU time (user + sys of the child, from
``os.wait4``) of N runs. Exits 1 when the wall median is above the budget (0.5 s);
with ``--budget-cpu`` the budget applies to the CPU median instead, which is the
steadier figure on a machine that other work keeps busy.

Runs measure skyc as installed: with bytecode caches (``pip install`` compiles
them). The child's environment drops PYTHONDONTWRITEBYTECODE and one untimed
warm-up run writes the caches; without them every module is compiled from
source on each run.

    python benchmarks/bench_plan.py [--runs N] [--budget SECONDS] [--budget-cpu]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TASK = "name: train\nresources:\n  accelerators: A100:8\nrun: python train.py\n"


def command(task: str) -> list[str]:
    """The console script next to this Python (not a version-manager shim, which adds
    its own start-up), else ``python -m skyc``."""
    beside = Path(sys.executable).parent / "skyc"
    exe = str(beside) if beside.exists() else shutil.which("skyc")
    args = ["plan", task, "--format", "json", "--no-diff"]
    return [exe, *args] if exe else [sys.executable, "-m", "skyc", *args]


def run_once(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run; exits when the command fails."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"skyc plan failed ({proc.returncode}):\n{err}")
    return wall, usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--budget", type=float, default=0.5)
    parser.add_argument("--budget-cpu", action="store_true",
                        help="apply the budget to the CPU median instead of the wall median")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        (home / "config.yaml").write_text("infra: [aws, gcp, azure]\n")
        task = home / "task.yaml"
        task.write_text(TASK)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["SKYC_HOME"] = str(home)
        run_once(command(str(task)), env)  # warm-up: writes bytecode caches
        runs = [run_once(command(str(task)), env) for _ in range(args.runs)]
    walls = [w for w, _ in runs]
    cpus = [c for _, c in runs]
    wall, cpu = statistics.median(walls), statistics.median(cpus)
    print(f"skyc plan (A100:8 over aws, gcp, azure; --no-diff), {args.runs} runs: "
          f"wall median {wall:.3f} s (min {min(walls):.3f}, max {max(walls):.3f}); "
          f"CPU median {cpu:.3f} s (min {min(cpus):.3f}); load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    measured, kind = (cpu, "CPU") if args.budget_cpu else (wall, "wall")
    if measured > args.budget:
        print(f"FAIL: {kind} median {measured:.3f} s is over the budget of {args.budget:.2f} s")
        return 1
    print(f"ok: {kind} median within the budget of {args.budget:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
