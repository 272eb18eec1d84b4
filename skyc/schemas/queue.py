"""The queue document: ``skyc queue --format json``, the jobs of clusters."""

from __future__ import annotations

from pydantic import Field

from skyc.schemas import versions
from skyc.schemas.base import Document


class NodeStatus(Document):
    node: str
    status: str


class ClusterJob(Document):
    cluster: str
    id: int = Field(description="the cluster's id for the job (skyc logs CLUSTER ID)")
    name: str | None
    owner: str | None = Field(description="who submitted it (null: not recorded, read as "
                              "the caller's own)")
    submitted_at: float | None = Field(description="epoch seconds")
    status: str = Field(description="PENDING, SETUP, RUNNING, SUCCEEDED, FAILED, ...")
    nodes: int = Field(description="how many nodes run it")
    node_statuses: list[NodeStatus] = Field(description="each node's status, head first")


class QueueDocument(Document):
    format_version: versions.QueueVersion
    jobs: list[ClusterJob]


TITLE = f"skyc queue document (skyc queue --format json), format_version {versions.QUEUE}"
