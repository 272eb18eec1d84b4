"""Compile (build + emit) of a 1,000-node AWS GPU cluster, in process, for each engine:
Terraform JSON and the Pulumi Python program. Prints the median of N runs per engine;
exits 1 when either is above the budget (1 s).

The cluster is larger than AWS's per-cluster limit (512 nodes, checked before a
stack is built), so the AWS lowering is called directly: this measures the
lowering and the emitters, not the limit check.

    python benchmarks/bench_compile.py [--runs N] [--nodes N] [--budget SECONDS]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from skyc.compiler import lowering
from skyc.compiler.base import BuildRequest
from skyc.model.plan import Placement
from skyc.settings.config import SkycConfig
from skyc.stacks import emit
from skyc.task.candidate import ResourceCandidate

ENGINES = ("terraform", "pulumi")


def compile_once(nodes: int, engine: str) -> tuple[float, int]:
    placement = Placement(cloud="aws", region="us-east-1", zone="use1-az4",
                          instance_type="p5.48xlarge", accelerators={"H100": 8},
                          num_nodes=nodes, hourly_cost=98.3 * nodes)
    candidate = ResourceCandidate(index=0, network_tier="best", disk_size=1024,
                                  ports=("8080", "9000-9010"), labels={"team": "ml"})
    request = BuildRequest(cluster="big", placement=placement, candidate=candidate,
                           config=SkycConfig(), workspace=Path("/tmp/skyc-bench/big"))
    started = time.perf_counter()
    stack = lowering("aws").build(request)
    files = emit(stack, engine)
    return time.perf_counter() - started, sum(len(t) for t in files.values())


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--budget", type=float, default=1.0)
    args = parser.parse_args()
    ok = True
    for engine in ENGINES:
        first, size = compile_once(args.nodes, engine)  # includes first-use imports
        times = [compile_once(args.nodes, engine)[0] for _ in range(args.runs)]
        median = statistics.median(times)
        print(f"compile {args.nodes} nodes to {engine}: first {first * 1000:.1f} ms, median "
              f"{median * 1000:.1f} ms over {args.runs} runs ({size} bytes); budget "
              f"{args.budget:.2f} s")
        ok = ok and max(first, median) <= args.budget
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
