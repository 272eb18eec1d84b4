"""The status document: ``skyc status --format json``."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from skyc.schemas import versions
from skyc.schemas.base import Document


class Autostop(Document):
    idle_minutes: float
    down: bool
    wait_for: str | None


class LastJob(Document):
    id: int = Field(description="the cluster's id for the job (skyc logs CLUSTER ID)")
    name: str | None
    status: str


class ClusterEvent(Document):
    id: int
    ts: float = Field(description="epoch seconds")
    kind: str
    message: str
    data: dict[str, Any] | None
    actor: str | None = Field(description="who did it (null: recorded before actors were)")


class ClusterStatus(Document):
    name: str
    owner: str | None = Field(description="who the cluster belongs to: the config's user: "
                              "of whoever created it, else user@host (null: recorded "
                              "before owners were, read as everyone's own)")
    status: Literal["INIT", "UP", "STOPPED", "FAILED"]
    infra: str = Field(description="cloud/region/zone as far as known")
    cloud: str
    region: str | None
    zone: str | None
    resources: str = Field(description="as the table shows them")
    placement: dict[str, Any] = Field(description="the placement it was launched with")
    nodes: list[dict[str, Any]]
    engine: str | None
    hourly_cost: float = Field(description="USD/hour for all nodes (a stopped cluster: its "
                               "disks)")
    hourly_cost_total: float = Field(description="the same as hourly_cost")
    hourly_cost_per_node: float = Field(description="USD/hour for one node, 6 decimals")
    autostop: Autostop | None
    launched_at: float | None = Field(description="epoch seconds")
    age_s: float | None
    last_job: LastJob | None
    events: list[ClusterEvent] | None = Field(default=None, description="with --verbose")


class Orphan(Document):
    """A cluster workspace the state database has no record of."""

    name: str
    workspace: str
    engine: str
    cloud: str | None
    nodes: int
    adopt: str = Field(description="the command that records it again")
    destroy: str = Field(description="the command that destroys it")


class SharedNetwork(Document):
    """A region's network skyc keeps for the clusters it places there (its own stack)."""

    name: str = Field(description="its stack: network-<cloud>-<region>")
    cloud: str
    region: str
    status: Literal["CREATING", "READY", "DELETING", "FAILED"]
    zones: list[str | None] = Field(description="the zones it has a subnet for, in the "
                                    "order first used (null: any zone)")
    clusters: list[str] = Field(description="the clusters in the state that use it")
    owner: str | None = Field(description="who created it")


class StatusDocument(Document):
    format_version: versions.StatusVersion
    clusters: list[ClusterStatus]
    orphans: list[Orphan]
    networks: list[SharedNetwork] = Field(description="the shared networks (all users')")


TITLE = f"skyc status document (skyc status --format json), format_version {versions.STATUS}"
