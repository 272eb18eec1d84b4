"""A job's records in the state database: when it gets its id, and when it ends.

Apart from the launch stages so that ``skyc exec`` and the managed-jobs controller
record their jobs without importing provisioning and failover.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from skyc.errors import SkycError

if TYPE_CHECKING:
    from skyc.state.database import StateDB


class NodeOutcome(Protocol):
    @property
    def node(self) -> str: ...

    @property
    def exit_code(self) -> int | None: ...


class JobResult(Protocol):
    """What the state keeps of a job's result (the runtime's ``JobResult``)."""

    @property
    def job_id(self) -> int: ...

    @property
    def log_dir(self) -> str: ...

    @property
    def status(self) -> str: ...

    @property
    def nodes(self) -> Sequence[NodeOutcome]: ...


class JobRecorder:
    """Records a job in the state database when it gets its id and again when it ends
    (a detached job stays RUNNING until queue, logs or status see it end)."""

    def __init__(self, db: StateDB, cluster: str, name: str | None,
                 announce: Callable[[str], None] | None = None) -> None:
        self.db = db
        self.cluster = cluster
        self.name = name
        self.row: int | None = None
        self.job_id: int | None = None
        self.announce = announce

    def started(self, job_id: int, log_dir: str) -> None:
        self.job_id = job_id
        self.row = self.db.add_job(self.cluster, self.name, status="RUNNING",
                                   log_path=log_dir, job_id=job_id)
        self.db.add_event(self.cluster, "job", f"job {job_id}: started", {"job": job_id})
        if self.announce is not None:  # as SkyPilot says it: "Job ID: N"
            self.announce(f"Job ID: {job_id} (on {self.cluster})")

    def finished(self, result: JobResult) -> None:
        if self.row is None:
            self.started(result.job_id, result.log_dir)
        assert self.row is not None
        self.db.add_event(self.cluster, "job", f"job {result.job_id}: {result.status}",
                          {"job": result.job_id})
        status = {"SUCCEEDED": "SUCCEEDED", "RUNNING": "RUNNING",
                  "CANCELLED": "CANCELLED"}.get(result.status, "FAILED")
        self.db.update_job(
            self.row, status=status,  # type: ignore[arg-type]
            exit_codes={n.node: n.exit_code for n in result.nodes if n.exit_code is not None},
        )


def record_job(db: StateDB, cluster: str, name: str | None, result: JobResult) -> None:
    """Record a finished (or detached) job's outcome in the state database."""
    JobRecorder(db, cluster, name).finished(result)


def interrupted(cluster: str, job_id: int | None, *, going_down: bool = False) -> SkycError:
    """What Ctrl-C while following a job means: the job runs on without the client (as
    with SkyPilot), unless the cluster is being taken down; how to follow or cancel it."""
    error = SkycError(f"interrupted: job {job_id} on {cluster} keeps running",
                      hint=f"follow it again with: skyc logs {cluster} {job_id} --follow; "
                      f"cancel it with: skyc cancel {cluster} {job_id}")
    if job_id is None:
        error = SkycError(f"interrupted before a job started on {cluster}")
    elif going_down:
        error = SkycError(f"interrupted: cluster {cluster} is taken down (--down), and job "
                          f"{job_id} with it")
    error.exit_code = 130
    return error
