"""Refreshes of one stack from two processes at once (a controller reading the cloud
after a lost node while the user runs `skyc status --refresh`): real terraform on a
local stack; each reads its own saved refresh plan, and none is left behind."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from skyc.apply.provision import provision, teardown
from skyc.model.plan import Placement
from skyc.settings.config import SkycConfig
from skyc.task.candidate import ResourceCandidate
from tests.support.terraform import requires_terraform, skyc_home

__all__ = ["skyc_home"]

pytestmark = [pytest.mark.slow, requires_terraform]


def _refresh_rounds(workspace: str, rounds: int, results: multiprocessing.Queue[str]) -> None:
    from skyc.stacks.registry import open_engine

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


def test_a_refresh_that_meets_a_lock_being_taken_runs_again(skyc_home: Path) -> None:
    """The state lock is held by a process that has not written (or has just removed)
    its lock-info file, as another terraform does while it takes or releases the lock:
    terraform refuses at once, without waiting out -lock-timeout (it cannot name the
    holder); skyc runs the refresh again once the lock is free."""
    import fcntl
    import threading

    from skyc.stacks.registry import open_engine
    from skyc.stacks.terraform import lost_lock_race

    placement = Placement(cloud="local", num_nodes=1, hourly_cost=0.0)
    provision("race", placement, ResourceCandidate(index=0), config=SkycConfig())
    workspace = skyc_home / "clusters" / "race"
    state = workspace / "terraform.tfstate"
    assert state.is_file() and not (workspace / ".terraform.tfstate.lock.info").exists()
    with state.open("r+") as held:
        fcntl.lockf(held, fcntl.LOCK_EX | fcntl.LOCK_NB)  # what terraform's lock takes
        release = threading.Timer(2.0, fcntl.lockf, (held, fcntl.LOCK_UN))
        release.start()
        try:
            engine = open_engine("terraform", workspace)
            found = engine.refresh()
        finally:
            release.join()
    assert [r.address for r in found.resources] == ["terraform_data.node_0"]
    # the first try met the held lock: its log says so, and that is the race skyc retries
    logs = sorted((workspace / "logs").glob("*-refresh.log"))
    refused = [log for log in logs if "Error acquiring the state lock" in log.read_text()]
    assert refused, [log.read_text()[-500:] for log in logs]
    text = refused[0].read_text()
    assert lost_lock_race(text.splitlines(), [])
    assert not list(workspace.glob("skyc-refresh*"))
    teardown("race")
