"""The managed-job lease against a real state database: one holder at a time, renewed
by its heartbeat, taken over only once expired, and a holder that lost it knows."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from skyc.errors import StateError
from skyc.jobs.lease import Lease, LeaseHeld
from skyc.jobs.records import JobSpecDoc
from skyc.jobs.store import ManagedJobStore
from skyc.state import StateDB


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
