"""Refreshes of one stack from two processes at once (a controller reading the cloud
after a lost node while the user runs `skyc status --refresh`): real terraform on a
local stack; each reads its own saved refresh plan, and none is left behind."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from skyc.config import SkycConfig
from skyc.optimizer.plan import Placement
from skyc.provision import provision, teardown
from skyc.task.candidate import ResourceCandidate
from tests.support.terraform import requires_terraform, skyc_home

__all__ = ["skyc_home"]

pytestmark = [pytest.mark.slow, requires_terraform]


def _refresh_rounds(workspace: str, rounds: int, results: multiprocessing.Queue[str]) -> None:
    from skyc.stacks.engines import open_engine

    try:
        for _ in range(rounds):
            found = open_engine("terraform", Path(workspace)).refresh()
            assert [r.address for r in found.resources] == ["terraform_data.node_0"]
        results.put("ok")
    except Exception as exc:  # reported to the test, which fails on it
        results.put(f"{type(exc).__name__}: {exc}")


def test_overlapping_refreshes_each_read_their_own_plan(skyc_home: Path) -> None:
    placement = Placement(cloud="local", num_nodes=1, hourly_cost=0.0)
    provision("ovl", placement, ResourceCandidate(index=0), config=SkycConfig())
    workspace = skyc_home / "clusters" / "ovl"
    context = multiprocessing.get_context("spawn")
    results: multiprocessing.Queue[str] = context.Queue()
    procs = [context.Process(target=_refresh_rounds, args=(str(workspace), 6, results))
             for _ in range(2)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(300)
    assert sorted(results.get(timeout=5) for _ in procs) == ["ok", "ok"]
    assert not list(workspace.glob("skyc-refresh*"))
    teardown("ovl")
