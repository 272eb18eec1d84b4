"""The jobs document: ``skyc jobs queue --format json``, the managed jobs."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from skyc.model.managed_jobs import ManagedStatus, Strategy
from skyc.schemas import versions
from skyc.schemas.base import Document


class Trail(Document):
    """A status the job entered: when, where and why."""

    id: int
    ts: float = Field(description="epoch seconds")
    status: str
    message: str
    data: dict[str, Any] | None


class Attempt(Document):
    """A cluster the job ran on, from provisioned to torn down."""

    id: int
    task_index: int
    cluster: str
    infra: str | None
    hourly_cost: float = Field(description="USD/hour for all of its nodes")
    cluster_job: int | None
    outcome: str | None
    started_at: float = Field(description="epoch seconds")
    ended_at: float | None


class ManagedJob(Document):
    id: int
    name: str | None
    owner: str | None = Field(description="who submitted it (null: recorded before owners "
                              "were, read as everyone's own)")
    status: ManagedStatus
    task_path: str
    num_tasks: int
    task_index: int
    restarts: int
    recoveries: int
    cluster: str | None
    cluster_job: int | None
    failure: str | None
    lease_until: float | None = Field(description="epoch seconds")
    controller_pid: int | None
    submitted_at: float = Field(description="epoch seconds")
    started_at: float | None
    ended_at: float | None
    strategy: Strategy
    controller: Literal["alive", "gone"] | None = Field(description="null once it ended")
    cost: float = Field(description="USD so far, every attempt's cluster, 6 decimals")
    trail: list[Trail]
    attempts: list[Attempt]


class JobsDocument(Document):
    format_version: versions.JobsVersion
    jobs: list[ManagedJob]


TITLE = (f"skyc jobs document (skyc jobs queue --format json), format_version "
         f"{versions.JOBS}")
