"""`skyc apply examples/hello.yaml --yes --down` on the local infra, command to exit.

Runs it N times (each in a fresh $SKYC_HOME, as a first launch is), reports the
median wall time and where the time goes: each terraform command (timed by a
wrapper set as $SKYC_TERRAFORM), Python start-up (`skyc --help`), and the rest
(optimizer, stack writing, the job itself). Exits 1 above the target.

    python benchmarks/bench_apply_local.py [--runs 7] [--target 3.0] [--task FILE]
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
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

WRAPPER = """#!/bin/sh
start=$(date +%s.%N)
"{terraform}" "$@"
rc=$?
end=$(date +%s.%N)
echo "$start $end $1" >> "$SKYC_BENCH_TF_LOG"
exit $rc
"""


def _timed(cmd: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True)
    took = time.perf_counter() - started
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return took


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--target", type=float, default=3.0)
    parser.add_argument("--task", default="examples/hello.yaml")
    args = parser.parse_args()
    terraform = os.environ.get("SKYC_TERRAFORM") or shutil.which("terraform") or shutil.which(
        "tofu")
    skyc = shutil.which("skyc")
    if not terraform or not skyc:
        print("terraform/tofu or the skyc command not found", file=sys.stderr)
        return 2
    totals: list[float] = []
    per_op: dict[str, list[float]] = defaultdict(list)
    with tempfile.TemporaryDirectory() as tmp:
        wrapper = Path(tmp) / "terraform"
        wrapper.write_text(WRAPPER.format(terraform=terraform))
        wrapper.chmod(0o755)
        base = {**os.environ, "SKYC_TERRAFORM": str(wrapper)}
        startup = [_timed([skyc, "--help"], base) for _ in range(3)]
        for i in range(args.runs):
            log = Path(tmp) / f"tf-{i}.log"
            env = {**base, "SKYC_HOME": str(Path(tmp) / f"home-{i}"),
                   "SKYC_BENCH_TF_LOG": str(log)}
            totals.append(_timed([skyc, "apply", args.task, "--yes", "--down"], env))
            ops: dict[str, float] = defaultdict(float)
            for line in log.read_text().splitlines():
                start, end, op = line.split()
                ops[op] += float(end) - float(start)
            for op, took in ops.items():
                per_op[op].append(took)
    median = statistics.median(totals)
    in_tf = sum(statistics.median(v) for v in per_op.values())
    print(f"skyc apply {args.task} --yes --down, {args.runs} runs: median {median:.2f} s "
          f"(min {min(totals):.2f}, max {max(totals):.2f}); target {args.target:.2f} s")
    print(f"  python start-up (skyc --help): {statistics.median(startup):.2f} s")
    for op in sorted(per_op, key=lambda o: -statistics.median(per_op[o])):
        times = per_op[op]
        print(f"  terraform {op:<8} {statistics.median(times):.2f} s per launch "
              f"(all runs of that command summed)")
    print(f"  terraform total {in_tf:.2f} s; everything else {median - in_tf:.2f} s")
    return 0 if median <= args.target else 1


if __name__ == "__main__":
    sys.exit(main())
