"""How long a cancel takes to stop ``pulumi up`` (a managed job cancelled while its
cluster is provisioned on the Pulumi engine): from the interrupt being requested to
EngineInterrupted, through the real Automation API. No Pulumi CLI can be installed
here: ``pulumi`` is the stand-in tests/support/pulumi_standin.py, each creation held
for minutes; on SIGINT it finishes the one in flight, saves its state and exits, as
the real CLI does (the real CLI's own shutdown time is not measured).

Prints the median of N runs (wall); exits 1 when it is above the budget (2 s).

    python benchmarks/bench_pulumi_interrupt.py [--runs N] [--budget SECONDS]
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from _timing import ROOT, budget_args, load_average

sys.path.insert(0, str(ROOT))

CASE = ROOT / "tests" / "fixtures" / "compile" / "aws" / "gpu_2node_spot"


def _once(home: Path) -> float:
    from skyc.errors import EngineInterrupted
    from skyc.stacks import open_engine, write_stack
    from skyc.stacks.engine import ProgressEvent, interruptible
    from tests.compiler.golden import compile_case

    workspace = home / "clusters" / f"bench-{time.monotonic_ns()}"
    stack = compile_case(CASE, workspace)
    write_stack(stack, workspace, {"ssh_public_key": "ssh-ed25519 AAAA bench"}, engine="pulumi")
    engine = open_engine("pulumi", workspace)
    engine.prepare(stack)
    diff = engine.plan()
    cancel = threading.Event()
    asked: list[float] = []

    def progress(event: ProgressEvent) -> None:
        if event.kind == "start" and not asked:
            asked.append(time.perf_counter())
            cancel.set()

    try:
        with interruptible(cancel):
            engine.apply(diff, progress)
    except EngineInterrupted:
        return time.perf_counter() - asked[0]
    sys.exit("pulumi up was not interrupted")


def main() -> int:
    args = budget_args(__doc__.splitlines()[0], 2.0)
    from tests.support.pulumi_standin import install

    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        os.environ.update(SKYC_HOME=str(home), STANDIN_SLOW_UP="300",
                          SKYC_PULUMI_ROOT=str(install(home / "standin")))
        times = [_once(home) for _ in range(args.runs)]
    median = statistics.median(times)
    print(f"cancel -> EngineInterrupted during pulumi up (stand-in CLI), {args.runs} runs: "
          f"wall median {median:.3f} s (min {min(times):.3f}, max {max(times):.3f}); "
          f"{load_average()}")
    if median > args.budget:
        print(f"over budget: wall median {median:.3f} s > {args.budget:.2f} s")
        return 1
    print(f"ok: wall median within the budget of {args.budget:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
