"""What the benchmarks share: the skyc command, whole-process timing (wall and CPU
seconds, medians over runs) and the wrapper that times each terraform command.

Runs measure skyc as installed: with bytecode caches (``pip install`` compiles
them). :func:`bench_env` drops PYTHONDONTWRITEBYTECODE, and :func:`time_runs` makes
one untimed warm-up run that writes the caches; without them every module would be
compiled from source on each run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Set as $SKYC_TERRAFORM, it runs terraform and appends "start end command" (epoch
# seconds) to the file named by $SKYC_BENCH_TF_LOG.
_TERRAFORM_WRAPPER = """#!/bin/sh
start=$(date +%s.%N)
"{terraform}" "$@"
rc=$?
end=$(date +%s.%N)
echo "$start $end $1" >> "$SKYC_BENCH_TF_LOG"
exit $rc
"""


def skyc_command(*args: str) -> list[str]:
    """The console script next to this Python (not a version-manager shim, which adds
    its own start-up), else the one on PATH, else ``python -m skyc``; then ``args``."""
    beside = Path(sys.executable).parent / "skyc"
    exe = str(beside) if beside.exists() else shutil.which("skyc")
    return [exe, *args] if exe else [sys.executable, "-m", "skyc", *args]


def bench_env(**extra: str) -> dict[str, str]:
    """This environment without PYTHONDONTWRITEBYTECODE, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(extra)
    return env


def run_once(cmd: Sequence[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + sys of the child, from ``os.wait4``) of one
    run in the repository root; exits with the command's stderr when it fails."""
    start = time.perf_counter()
    proc = subprocess.Popen(list(cmd), cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"{' '.join(cmd)} failed ({code}):\n{err[-3000:]}")
    return wall, usage.ru_utime + usage.ru_stime


@dataclass
class Timings:
    """Wall and CPU seconds of each timed run."""

    walls: list[float]
    cpus: list[float]

    @property
    def wall(self) -> float:
        return statistics.median(self.walls)

    @property
    def cpu(self) -> float:
        return statistics.median(self.cpus)

    def summary(self) -> str:
        return (f"wall median {self.wall:.3f} s (min {min(self.walls):.3f}, "
                f"max {max(self.walls):.3f}); CPU median {self.cpu:.3f} s "
                f"(min {min(self.cpus):.3f})")


def budget_args(description: str, budget: float) -> argparse.Namespace:
    """``--runs N`` (15), ``--budget SECONDS`` and ``--budget-cpu``, parsed."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--budget", type=float, default=budget)
    parser.add_argument("--budget-cpu", action="store_true",
                        help="apply the budget to the CPU median instead of the wall median")
    return parser.parse_args()


def over_budget(times: Timings, budget: float, on_cpu: bool) -> str | None:
    """Why the wall median (the CPU median when ``on_cpu``) fails the budget; None
    when it is within it."""
    measured, kind = (times.cpu, "CPU") if on_cpu else (times.wall, "wall")
    if measured > budget:
        return f"FAIL: {kind} median {measured:.3f} s is over the budget of {budget:.3f} s"
    return None


def time_runs(cmd: Sequence[str], env: dict[str, str], runs: int) -> Timings:
    """``runs`` timed runs of ``cmd``, after one untimed warm-up run."""
    run_once(cmd, env)
    timed = [run_once(cmd, env) for _ in range(runs)]
    return Timings([w for w, _ in timed], [c for _, c in timed])


def load_average() -> str:
    return f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"


def find_terraform() -> str | None:
    """$SKYC_TERRAFORM, else terraform or tofu on PATH."""
    return os.environ.get("SKYC_TERRAFORM") or shutil.which("terraform") or shutil.which("tofu")


def terraform_wrapper(directory: Path, terraform: str) -> Path:
    """Writes the timing wrapper around ``terraform`` into ``directory``; set it as
    $SKYC_TERRAFORM and name the log file in $SKYC_BENCH_TF_LOG."""
    wrapper = directory / "terraform"
    wrapper.write_text(_TERRAFORM_WRAPPER.format(terraform=terraform))
    wrapper.chmod(0o755)
    return wrapper


def terraform_spans(log: Path) -> list[tuple[str, float]]:
    """(command, seconds) of each terraform run the wrapper recorded in ``log``."""
    spans = []
    for line in log.read_text().splitlines():
        start, end, op = line.split()
        spans.append((op, float(end) - float(start)))
    return spans
