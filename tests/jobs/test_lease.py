"""The managed-job lease against a real state database: one holder at a time, renewed
by its heartbeat, taken over only once expired, and a holder that lost it knows."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from skyc.errors import LeaseHeld, StateError
from skyc.jobs.lease import Lease
from skyc.model.managed_jobs import JobSpecDoc
from skyc.state.database import StateDB
from skyc.state.managed_jobs import ManagedJobStore


@pytest.fixture
def store(tmp_path: Path) -> ManagedJobStore:
    return ManagedJobStore(StateDB(tmp_path / "state.db"))


def test_a_live_lease_is_renewed_and_refuses_a_second_holder(store: ManagedJobStore) -> None:
    job = store.add("j", "/t.yaml", JobSpecDoc(), 1)
    first = Lease(store, job, ttl=1.5)
    first.acquire()
    try:
        time.sleep(2.5)                      # longer than the ttl: only the heartbeat keeps it
        with pytest.raises(LeaseHeld, match="supervised by another controller"):
            Lease(store, job, ttl=1.5).acquire()
        assert not first.lost.is_set()
    finally:
        first.release()
    second = Lease(store, job, ttl=1.5)      # released: free at once
    second.acquire()
    second.release()
    assert store.require(job).lease_owner is None


def test_an_expired_lease_is_taken_over_and_the_old_holder_sees_it_lost(
        store: ManagedJobStore) -> None:
    job = store.add("j", "/t.yaml", JobSpecDoc(), 1)
    old = Lease(store, job, ttl=3.0)
    old.acquire()
    with store.db.transaction() as conn:     # as if the holder had stalled past its ttl
        conn.execute("UPDATE managed_jobs SET lease_until = ? WHERE id = ?",
                     (time.time() - 1, job))
    new = Lease(store, job, ttl=3.0)
    new.acquire()
    try:
        assert old.lost.wait(timeout=5)      # its next renewal is refused
        assert store.require(job).lease_owner == new.owner
    finally:
        old.release()
        new.release()


def test_trail_attempts_and_cost(store: ManagedJobStore) -> None:
    job = store.add("j", "/t.yaml", JobSpecDoc(), 1)
    attempt = store.open_attempt(job, 0, "skyc-job-1", "aws/us-east-1", 3.6)
    with store.db.transaction() as conn:
        conn.execute("UPDATE managed_attempts SET started_at = ? WHERE id = ?",
                     (time.time() - 100, attempt))
    store.close_attempt(attempt, "PREEMPTED: lost")
    store.set_status(job, "RECOVERING", "lost", {"infra": "aws/us-east-1"}, recoveries=1)
    assert store.cost(job) == pytest.approx(0.1, rel=0.05)     # 100 s at $3.6/hour
    assert [e.status for e in store.trail(job)] == ["PENDING", "RECOVERING"]
    assert store.require(job).recoveries == 1
    with pytest.raises(StateError, match="unknown column"):
        store.update(job, bogus=1)


def test_which_jobs_a_controller_takes_over(store: ManagedJobStore) -> None:
    import os
    import subprocess
    import sys

    from skyc.jobs.daemon import HANDOFF_GRACE_S, _orphaned
    from skyc.jobs.starter import unsupervised

    store.add("fresh", "/t.yaml", JobSpecDoc(), 1)                  # its launcher hands it over
    stale = store.add("stale", "/t.yaml", JobSpecDoc(), 1)          # its launcher died
    held = store.add("held", "/t.yaml", JobSpecDoc(), 1)            # a live controller has it
    dead = store.add("dead", "/t.yaml", JobSpecDoc(), 1)            # its controller was killed
    done = store.add("done", "/t.yaml", JobSpecDoc(), 1)
    now = time.time()
    with store.db.transaction() as conn:
        conn.execute("UPDATE managed_jobs SET submitted_at = ? WHERE id = ?",
                     (now - HANDOFF_GRACE_S - 1, stale))
    assert store.take_lease(held, f"{os.uname().nodename}:{os.getpid()}:a", 30, os.getpid())
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    gone_pid = int(gone.stdout)
    assert store.take_lease(dead, f"{os.uname().nodename}:{gone_pid}:b", 30, gone_pid)
    store.set_status(done, "SUCCEEDED", "ok")
    jobs = {j.name: j for j in store.all_jobs()}

    taken = {name for name, j in jobs.items() if _orphaned(j, time.time())}
    assert taken == {"stale"}            # the dead holder's lease has not expired yet
    assert _orphaned(jobs["dead"], time.time() + 31)   # then it is taken
    # Commands restart the controller for jobs no live process holds, at once.
    assert {j.name for j in unsupervised(list(jobs.values()))} == {"fresh", "stale", "dead"}
