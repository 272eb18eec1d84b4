"""Managed jobs in the state database (tables made by the state's migration 4), on
either store (sqlite or PostgreSQL: the SQL goes through the dialect's transaction).

A managed job outlives its clusters: destroying a cluster leaves these rows alone.
The lease columns (``lease_owner``, ``lease_until``) make sure one controller at a
time supervises a job: it is taken and renewed in one write transaction each.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from skyc.errors import StateError
from skyc.state.database import StateDB
from skyc.state.records import dump_payload, load_payload, owned_by

if TYPE_CHECKING:
    # Imported where used: skyc.jobs (its package) imports this module.
    from skyc.model.managed_jobs import (
        AttemptRecord,
        JobSpecDoc,
        ManagedJob,
        ManagedStatus,
        TrailEvent,
    )

_COLUMNS = frozenset({
    "name", "status", "task_index", "restarts", "recoveries", "cluster", "cluster_job",
    "failure", "cancel_requested", "controller_pid", "started_at", "ended_at",
})


class ManagedJobStore:
    def __init__(self, db: StateDB | None = None) -> None:
        self.db = db or StateDB()

    def close(self) -> None:
        self.db.close()

    # jobs -------------------------------------------------------------------

    def add(self, name: str | None, task_path: str, spec: JobSpecDoc, num_tasks: int,
            *, owner: str | None = None) -> int:
        """Record a new managed job of ``owner`` (default: who this skyc acts for)."""
        now = time.time()
        owner = owner or self.db.caller()
        with self.db.transaction() as conn:
            job_id = conn.insert(
                "INSERT INTO managed_jobs (name, status, task_path, spec, num_tasks,"
                " submitted_at, updated_at, owner) VALUES (?, 'PENDING', ?, ?, ?, ?, ?, ?)",
                (name, task_path, dump_payload(spec.model_dump(mode="json")), num_tasks, now,
                 now, owner))
            conn.execute("INSERT INTO managed_events (job, ts, status, message) VALUES"
                         " (?, ?, 'PENDING', 'submitted')", (job_id, now))
        return job_id

    def get(self, job_id: int) -> ManagedJob | None:
        rows = self.db.query("SELECT * FROM managed_jobs WHERE id = ?", (job_id,))
        return job_from_row(rows[0]) if rows else None

    def require(self, job_id: int) -> ManagedJob:
        job = self.get(job_id)
        if job is None:
            raise StateError(f"no managed job {job_id}", hint="see them with: skyc jobs queue")
        return job

    def all_jobs(self, *, owner: str | None = None) -> list[ManagedJob]:
        """Every managed job; with ``owner``, only that owner's (and those recorded
        before owners were)."""
        jobs = [job_from_row(r) for r in self.db.query("SELECT * FROM managed_jobs ORDER BY id")]
        return jobs if owner is None else [j for j in jobs if owned_by(j.owner, owner)]

    def update(self, job_id: int, **changes: Any) -> None:
        unknown = set(changes) - _COLUMNS
        if unknown:
            raise StateError(f"managed job: unknown column(s) {sorted(unknown)}")
        if not changes:
            return
        sets = ", ".join(f"{k} = ?" for k in changes)
        with self.db.transaction() as conn:
            conn.execute(f"UPDATE managed_jobs SET {sets}, updated_at = ? WHERE id = ?",
                         (*changes.values(), time.time(), job_id))

    def set_status(self, job_id: int, status: ManagedStatus, message: str,
                   data: dict[str, Any] | None = None, **changes: Any) -> None:
        """Enter ``status``: one trail event (when, where, why) and the job's row."""
        from skyc.model.managed_jobs import MANAGED_STATUSES

        if status not in MANAGED_STATUSES:
            raise StateError(f"invalid managed job status {status!r}")
        now = time.time()
        if status in ("SUCCEEDED", "FAILED", "FAILED_SETUP", "FAILED_NO_RESOURCE",
                      "CANCELLED"):
            changes.setdefault("ended_at", now)
        cols = {"status": status, **changes}
        unknown = set(cols) - _COLUMNS
        if unknown:
            raise StateError(f"managed job: unknown column(s) {sorted(unknown)}")
        sets = ", ".join(f"{k} = ?" for k in cols)
        with self.db.transaction() as conn:
            conn.execute(f"UPDATE managed_jobs SET {sets}, updated_at = ? WHERE id = ?",
                         (*cols.values(), now, job_id))
            conn.execute(
                "INSERT INTO managed_events (job, ts, status, message, data)"
                " VALUES (?, ?, ?, ?, ?)",
                (job_id, now, status, message, None if data is None else dump_payload(data)))

    def request_cancel(self, job_id: int) -> None:
        with self.db.transaction() as conn:
            conn.execute("UPDATE managed_jobs SET cancel_requested = 1, updated_at = ?"
                         " WHERE id = ?", (time.time(), job_id))

    # the lease --------------------------------------------------------------

    def take_lease(self, job_id: int, owner: str, ttl: float, pid: int) -> bool:
        """Take (or renew) the job's lease for ``ttl`` seconds; False while another
        owner's lease has not expired."""
        now = time.time()
        with self.db.transaction() as conn:
            return conn.execute(
                "UPDATE managed_jobs SET lease_owner = ?, lease_until = ?, controller_pid = ?,"
                " updated_at = ? WHERE id = ? AND (lease_owner IS NULL OR lease_owner = ?"
                " OR lease_until IS NULL OR lease_until < ?)",
                (owner, now + ttl, pid, now, job_id, owner, now)) == 1

    def release_lease(self, job_id: int, owner: str) -> None:
        with self.db.transaction() as conn:
            conn.execute("UPDATE managed_jobs SET lease_owner = NULL, lease_until = NULL"
                         " WHERE id = ? AND lease_owner = ?", (job_id, owner))

    # attempts and trail -----------------------------------------------------

    def open_attempt(self, job_id: int, task_index: int, cluster: str, infra: str,
                     hourly_cost: float) -> int:
        with self.db.transaction() as conn:
            return conn.insert(
                "INSERT INTO managed_attempts (job, task_index, cluster, infra, hourly_cost,"
                " started_at) VALUES (?, ?, ?, ?, ?, ?)",
                (job_id, task_index, cluster, infra, hourly_cost, time.time()))

    def set_attempt_job(self, attempt: int, cluster_job: int) -> None:
        with self.db.transaction() as conn:
            conn.execute("UPDATE managed_attempts SET cluster_job = ? WHERE id = ?",
                         (cluster_job, attempt))

    def close_attempt(self, attempt: int, outcome: str) -> None:
        with self.db.transaction() as conn:
            conn.execute("UPDATE managed_attempts SET outcome = ?, ended_at = ? WHERE id = ?"
                         " AND ended_at IS NULL", (outcome, time.time(), attempt))

    def attempts(self, job_id: int) -> list[AttemptRecord]:
        rows = self.db.query("SELECT * FROM managed_attempts WHERE job = ? ORDER BY id",
                             (job_id,))
        return [attempt_from_row(r) for r in rows]

    def trail(self, job_id: int) -> list[TrailEvent]:
        rows = self.db.query("SELECT * FROM managed_events WHERE job = ? ORDER BY id",
                             (job_id,))
        return [trail_from_row(r) for r in rows]

    def cost(self, job_id: int) -> float:
        """USD so far: each attempt's $/hour times the time its cluster was up."""
        now = time.time()
        return sum(a.cost(now) for a in self.attempts(job_id))


def attempt_from_row(row: Mapping[str, Any]) -> AttemptRecord:
    from skyc.model.managed_jobs import AttemptRecord

    return AttemptRecord(**dict(row))


def trail_from_row(row: Mapping[str, Any]) -> TrailEvent:
    from skyc.model.managed_jobs import TrailEvent

    return TrailEvent(id=row["id"], job=row["job"], ts=row["ts"], status=row["status"],
                      message=row["message"],
                      data=load_payload(row["data"], f"managed job {row['job']} event"))


def job_from_row(row: Mapping[str, Any]) -> ManagedJob:
    from skyc.model.managed_jobs import JobSpecDoc, ManagedJob

    doc = dict(row)
    doc["spec"] = JobSpecDoc.model_validate(
        load_payload(doc.pop("spec"), f"managed job {doc['id']} spec") or {})
    doc["cancel_requested"] = bool(doc["cancel_requested"])
    doc.pop("updated_at", None)
    return ManagedJob.model_validate(doc)
