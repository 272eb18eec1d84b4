"""Wall time of ``skyc plan`` for one GPU task over aws, gcp and azure (bundled catalog),
as a whole process. Prints the median of N runs; exits 1 above the budget (0.5 s).

    python benchmarks/bench_plan.py [--runs N] [--budget SECONDS]
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
    beside = Path(sys.executable).parent / "skyc"
    exe = str(beside) if beside.exists() else shutil.which("skyc")
    args = ["plan", task, "--format", "json"]
    return [exe, *args] if exe else [sys.executable, "-m", "skyc", *args]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--budget", type=float, default=0.5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        (home / "config.yaml").write_text("infra: [aws, gcp, azure]\n")
        task = home / "task.yaml"
        task.write_text(TASK)
        env = {**os.environ, "SKYC_HOME": str(home)}
        times = []
        for _ in range(args.runs):
            start = time.perf_counter()
            done = subprocess.run(command(str(task)), cwd=ROOT, env=env, capture_output=True,
                                  text=True)
            times.append(time.perf_counter() - start)
            if done.returncode != 0:
                sys.exit(f"skyc plan failed ({done.returncode}):\n{done.stderr}")
    median = statistics.median(times)
    print(f"skyc plan (A100:8 over aws, gcp, azure): median {median:.3f} s over {args.runs} "
          f"runs (min {min(times):.3f}, max {max(times):.3f}); budget {args.budget:.2f} s")
    return 0 if median <= args.budget else 1


if __name__ == "__main__":
    sys.exit(main())
