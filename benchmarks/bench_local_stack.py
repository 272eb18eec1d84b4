"""skyc's own overhead around terraform for a local stack: provision (init, plan, apply,
outputs) + re-provision + teardown, total wall time minus the wall time of terraform's
processes (recorded by a wrapper set as $SKYC_TERRAFORM). Exits 1 above the budget (1 s).

    python benchmarks/bench_local_stack.py [--nodes N] [--budget SECONDS]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from _timing import ROOT, find_terraform, terraform_spans, terraform_wrapper

sys.path.insert(0, str(ROOT))


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--budget", type=float, default=1.0)
    args = parser.parse_args()
    terraform = find_terraform()
    if not terraform:
        print("terraform/tofu not found", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "terraform-times.log"
        wrapper = terraform_wrapper(Path(tmp), terraform)
        os.environ.update(SKYC_HOME=str(Path(tmp) / "home"), SKYC_TERRAFORM=str(wrapper),
                          SKYC_BENCH_TF_LOG=str(log))

        from skyc.apply.provision import provision, teardown
        from skyc.model.plan import Placement
        from skyc.settings.config import SkycConfig
        from skyc.task.candidate import ResourceCandidate

        placement = Placement(cloud="local", num_nodes=args.nodes, hourly_cost=0.0)
        candidate = ResourceCandidate(index=0)
        started = time.perf_counter()
        provision("bench", placement, candidate, config=SkycConfig())
        provision("bench", placement, candidate, config=SkycConfig())  # no changes
        teardown("bench")
        total = time.perf_counter() - started
        spans = terraform_spans(log)
        in_terraform = sum(took for _, took in spans)
    overhead = total - in_terraform
    print(f"local stack, {args.nodes} nodes, {len(spans)} terraform runs: total "
          f"{total:.2f} s, terraform {in_terraform:.2f} s, skyc overhead {overhead:.2f} s "
          f"(budget {args.budget:.2f} s)")
    return 0 if overhead <= args.budget else 1


if __name__ == "__main__":
    sys.exit(main())
