"""Failover against moto behind the fault proxy: the time of each failover step.

A one-node AWS task fails in us-east-1/use1-az1 (InsufficientInstanceCapacity),
then in use1-az2 (VcpuLimitExceeded, region quota) and comes up in us-east-2.
For each attempt it reports the failed apply, the destroy of what the attempt
created (cleanup) and the time to the next attempt's start; then the successful
apply and the final teardown. Real terraform + AWS provider + moto server.

    python benchmarks/bench_failover.py
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


class TimingReporter:
    """Records (time, stage, detail) for every stage and attempt of a launch."""

    def __init__(self) -> None:
        self.marks: list[tuple[float, str, str]] = []

    def stage(self, name: str, detail: str = "") -> None:
        self.marks.append((time.perf_counter(), name, detail))

    def plan(self, plan: Any) -> None:
        pass

    def attempt(self, attempt: Any, next_placement: Any) -> None:
        self.marks.append((time.perf_counter(), "attempt", f"{attempt.error or 'up'}"))

    def engine_event(self, event: Any) -> None:
        pass

    def log_line(self, node: str, line: str) -> None:
        pass


def main() -> int:
    from skyc.apply.failover import FailoverPolicy
    from skyc.apply.launch import LaunchOptions, launch
    from skyc.apply.provision import teardown
    from skyc.task import load_tasks
    from tests.support.fault_proxy import FaultProxy, FaultRule
    from tests.support.moto_server import CREDENTIALS, start_moto
    from tests.support.terraform import plugin_dir

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        moto = start_moto(tmp / "moto.log")
        try:
            with FaultProxy(upstream=moto.url, rules=[
                FaultRule(code="InsufficientInstanceCapacity", zone="use1-az1"),
                FaultRule(code="VcpuLimitExceeded", region="us-east-1"),
            ]) as proxy:
                home = tmp / "home"
                home.mkdir()
                (home / "config.yaml").write_text(
                    f"infra: [aws]\naws:\n  endpoint_url: {proxy.url}\n")
                os.environ.update(CREDENTIALS, SKYC_HOME=str(home))
                mirror = plugin_dir()
                if mirror:
                    os.environ["SKYC_TF_PLUGIN_DIR"] = mirror
                task = tmp / "bench.yaml"
                task.write_text("name: bench\nresources:\n  infra: aws\n"
                                "  instance_type: inf1.xlarge\n  disk_tier: low\n")
                reporter = TimingReporter()
                started = time.perf_counter()
                result = launch(load_tasks(task).tasks,
                                LaunchOptions(failover=FailoverPolicy(max_attempts=4)),
                                reporter)
                up = time.perf_counter()
                teardown("bench")
                done = time.perf_counter()
        finally:
            moto.process.terminate()
            moto.process.wait(10)
    print(f"failover to {result.placement.infra} after {len(result.attempts)} attempts; "
          f"launch {up - started:.1f} s, teardown {done - up:.1f} s")
    _report(reporter.marks, up)
    return 0


def _report(marks: list[tuple[float, str, str]], up: float) -> None:
    """One line per attempt: plan + apply until the error, then destroy + re-plan."""
    provisions = [(t, d) for t, n, d in marks if n == "provision"]
    cleanups = [t for t, n, _ in marks if n == "cleanup"]
    attempts = [(t, d) for t, n, d in marks if n == "attempt"]
    for i, (t0, where) in enumerate(provisions):
        end, outcome = attempts[i]
        if outcome == "up":
            print(f"  step {i + 1} {where}: apply {end - t0:.1f} s -> up")
            continue
        cleanup = cleanups[i]
        next_start = provisions[i + 1][0] if i + 1 < len(provisions) else up
        print(f"  step {i + 1} {where}: plan+apply until {outcome} {cleanup - t0:.1f} s, "
              f"destroy + re-plan {next_start - cleanup:.1f} s")

if __name__ == "__main__":
    sys.exit(main())
