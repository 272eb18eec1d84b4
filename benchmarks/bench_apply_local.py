"""`skyc apply examples/hello.yaml --yes --down` on the local infra, command to exit.

Runs it N times (each in a fresh $SKYC_HOME, as a first launch is), reports the
median wall time and where the time goes: each terraform command (timed by a
wrapper set as $SKYC_TERRAFORM), Python start-up (`skyc --help`), and the rest
(optimizer, stack writing, the job itself). Exits 1 above the target.

    python benchmarks/bench_apply_local.py [--runs 7] [--target 3.0] [--task FILE]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from _timing import (
    bench_env,
    find_terraform,
    run_once,
    skyc_command,
    terraform_spans,
    terraform_wrapper,
)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--target", type=float, default=3.0)
    parser.add_argument("--task", default="examples/hello.yaml")
    args = parser.parse_args()
    terraform = find_terraform()
    if not terraform:
        print("terraform/tofu not found", file=sys.stderr)
        return 2
    totals: list[float] = []
    per_op: dict[str, list[float]] = defaultdict(list)
    with tempfile.TemporaryDirectory() as tmp:
        base = bench_env(SKYC_TERRAFORM=str(terraform_wrapper(Path(tmp), terraform)))
        startup = [run_once(skyc_command("--help"), base)[0] for _ in range(3)]
        for i in range(args.runs):
            log = Path(tmp) / f"tf-{i}.log"
            env = {**base, "SKYC_HOME": str(Path(tmp) / f"home-{i}"),
                   "SKYC_BENCH_TF_LOG": str(log)}
            apply = skyc_command("apply", args.task, "--yes", "--down")
            totals.append(run_once(apply, env)[0])
            ops: dict[str, float] = defaultdict(float)
            for op, took in terraform_spans(log):
                ops[op] += took
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
