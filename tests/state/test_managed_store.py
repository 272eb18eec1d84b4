"""Managed jobs' tables on both kinds of state (sqlite and PostgreSQL): a job, its
status trail, its attempts and cost, cancelling, and the controller's lease."""

from __future__ import annotations

import time

import pytest

from skyc.errors import LeaseHeld, StateError
from skyc.jobs.lease import Lease
from skyc.model.managed_jobs import JobSpecDoc, Recovery
from skyc.state.managed_jobs import ManagedJobStore
from tests.state.conftest import StateKind


def test_a_job_its_trail_attempts_and_cost(state: StateKind) -> None:
    store = ManagedJobStore(state.open())
    try:
        spec = JobSpecDoc(envs={"A": "1"}, recovery=Recovery(strategy="FAILOVER"))
        job = store.add("train", "/t.yaml", spec, 2)
        assert store.add(None, "/u.yaml", JobSpecDoc(), 1) == job + 1
        attempt = store.open_attempt(job, 0, "skyc-job-1", "aws/us-east-1", 3.6)
        store.set_attempt_job(attempt, 7)
        with store.db.transaction() as tx:
            tx.execute("UPDATE managed_attempts SET started_at = ? WHERE id = ?",
                       (time.time() - 100, attempt))
        store.close_attempt(attempt, "PREEMPTED: lost")
        store.close_attempt(attempt, "ignored: already closed")
        store.set_status(job, "RECOVERING", "lost", {"infra": "aws/us-east-1",
                                                     "token": "t0ps3cret"}, recoveries=1)
        store.update(job, task_index=1, cluster="skyc-job-2")
        store.request_cancel(job)
        got = store.require(job)
        assert (got.name, got.status, got.num_tasks, got.task_index, got.recoveries,
                got.cluster, got.cancel_requested) == (
            "train", "RECOVERING", 2, 1, 1, "skyc-job-2", True)
        assert got.spec == spec
        [first] = store.attempts(job)
        assert (first.cluster_job, first.outcome) == (7, "PREEMPTED: lost")
        assert store.cost(job) == pytest.approx(0.1, rel=0.05)   # 100 s at $3.6/hour
        trail = store.trail(job)
        assert [e.status for e in trail] == ["PENDING", "RECOVERING"]
        assert trail[1].data == {"infra": "aws/us-east-1", "token": "<redacted>"}
        store.set_status(job, "SUCCEEDED", "done")
        assert store.require(job).ended_at is not None
        assert [j.id for j in store.all_jobs()] == [job, job + 1]
        with pytest.raises(StateError, match="unknown column"):
            store.update(job, bogus=1)
        with pytest.raises(StateError, match="no managed job 999"):
            store.require(999)
    finally:
        store.close()
    assert "t0ps3cret" not in state.dump()


def test_one_controller_holds_the_lease(state: StateKind) -> None:
    store = ManagedJobStore(state.open())
    try:
        job = store.add("j", "/t.yaml", JobSpecDoc(), 1)
        assert store.take_lease(job, "a", 30, 1) is True
        assert store.take_lease(job, "b", 30, 2) is False
        assert store.take_lease(job, "a", 30, 1) is True       # renewed by its holder
        store.release_lease(job, "b")                          # not b's to release
        assert store.require(job).lease_owner == "a"
        store.release_lease(job, "a")
        first = Lease(store, job, ttl=5.0)
        first.acquire()
        try:
            with pytest.raises(LeaseHeld):
                Lease(store, job, ttl=5.0).acquire()
        finally:
            first.release()
        assert store.require(job).lease_owner is None
    finally:
        store.close()
