"""What the state database keeps of a managed job: the job, its attempts, its trail."""

from __future__ import annotations

import time
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

ManagedStatus = Literal[
    "PENDING", "STARTING", "RUNNING", "RECOVERING", "SUCCEEDED", "FAILED", "FAILED_SETUP",
    "FAILED_NO_RESOURCE", "CANCELLING", "CANCELLED",
]
MANAGED_STATUSES: tuple[str, ...] = get_args(ManagedStatus)
TERMINAL: frozenset[str] = frozenset(
    {"SUCCEEDED", "FAILED", "FAILED_SETUP", "FAILED_NO_RESOURCE", "CANCELLED"})
Strategy = Literal["EAGER_NEXT_REGION", "FAILOVER", "NONE"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Recovery(_Model):
    """How the controller recovers: ``job_recovery`` of the task, with its defaults."""

    strategy: Strategy = "EAGER_NEXT_REGION"
    max_restarts_on_errors: int = 0
    recover_on_exit_codes: list[int] = Field(default_factory=list)


class JobSpecDoc(_Model):
    """What the controller needs to load the task again (never a secret's value)."""

    cwd: str = "."                       # where relative paths (workdir) are read from
    envs: dict[str, str] = Field(default_factory=dict)
    from_stdin: list[str] = Field(default_factory=list)   # secrets' names
    stdin_envs: list[str] = Field(default_factory=list)   # --env names that look secret
    recovery: Recovery = Field(default_factory=Recovery)


class ManagedJob(_Model):
    id: int
    name: str | None = None
    status: ManagedStatus = "PENDING"
    task_path: str
    spec: JobSpecDoc
    num_tasks: int = 1
    task_index: int = 0
    restarts: int = 0
    recoveries: int = 0
    cluster: str | None = None
    cluster_job: int | None = None
    failure: str | None = None
    cancel_requested: bool = False
    lease_owner: str | None = None
    lease_until: float | None = None
    controller_pid: int | None = None
    submitted_at: float
    started_at: float | None = None
    ended_at: float | None = None
    owner: str | None = None             # who submitted it (None: before owners were)

    @property
    def done(self) -> bool:
        return self.status in TERMINAL


class AttemptRecord(_Model):
    """One cluster the job ran on, from provisioned to torn down (cost is counted here)."""

    id: int
    job: int
    task_index: int
    cluster: str
    infra: str | None = None
    hourly_cost: float = 0.0
    cluster_job: int | None = None
    outcome: str | None = None
    started_at: float
    ended_at: float | None = None

    def cost(self, now: float | None = None) -> float:
        end = self.ended_at if self.ended_at is not None else (now or time.time())
        return self.hourly_cost * max(0.0, end - self.started_at) / 3600.0


class TrailEvent(_Model):
    """A status the job entered: when, where (the infra) and why."""

    id: int
    job: int
    ts: float
    status: str
    message: str
    data: dict[str, Any] | None = None


def cluster_for(job: ManagedJob, task_index: int) -> str:
    """The job's cluster for one of its tasks: fixed by the job, so a restarted
    controller finds it again instead of making another."""
    return f"skyc-job-{job.id}" + (f"-{task_index}" if job.num_tasks > 1 else "")
