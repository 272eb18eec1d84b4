"""A job's records in the state database: when it gets its id, and when it ends.

Apart from the launch stages so that ``skyc exec`` and the managed-jobs controller
record their jobs without importing provisioning and failover.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from skyc.runtime import JobResult
    from skyc.state.database import StateDB


class JobRecorder:
    """Records a job in the state database when it gets its id and again when it ends
    (a detached job stays RUNNING until queue, logs or status see it end)."""

    def __init__(self, db: StateDB, cluster: str, name: str | None) -> None:
        self.db = db
        self.cluster = cluster
        self.name = name
        self.row: int | None = None

    def started(self, job_id: int, log_dir: str) -> None:
        self.row = self.db.add_job(self.cluster, self.name, status="RUNNING",
                                   log_path=log_dir, job_id=job_id)
        self.db.add_event(self.cluster, "job", f"job {job_id}: started", {"job": job_id})

    def finished(self, result: JobResult) -> None:
        if self.row is None:
            self.started(result.job_id, result.log_dir)
        assert self.row is not None
        self.db.add_event(self.cluster, "job", f"job {result.job_id}: {result.status}",
                          {"job": result.job_id})
        status = {"SUCCEEDED": "SUCCEEDED", "RUNNING": "RUNNING"}.get(result.status, "FAILED")
        self.db.update_job(
            self.row, status=status,  # type: ignore[arg-type]
            exit_codes={n.node: n.exit_code for n in result.nodes if n.exit_code is not None},
        )


def record_job(db: StateDB, cluster: str, name: str | None, result: JobResult) -> None:
    """Record a finished (or detached) job's outcome in the state database."""
    JobRecorder(db, cluster, name).finished(result)
