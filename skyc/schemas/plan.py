"""The plan document: ``skyc plan --format json`` and ``skyc compile``'s plan.json.

The optimizer's :class:`~skyc.model.plan.Plan` with every placement priced in
both units (USD/hour: ``hourly_cost_total`` for all of a task's nodes, the same as
``hourly_cost``, and ``hourly_cost_per_node``, rounded to 6 decimals). ``skyc plan``
adds ``cost``, ``policy``, and, when asked for, ``stacks`` (each cluster's engine
diff), ``notes`` and ``run_cost``; ``skyc compile`` adds ``stacks`` (the files it
wrote). The fields one of them leaves out are not required.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from skyc.model.plan import CatalogSource, Placement
from skyc.optimizer.pipeline_cost import RunCost
from skyc.schemas import versions
from skyc.schemas.base import Document


class PricedPlacement(Placement):
    """A placement with its price in both units."""

    hourly_cost_total: float = Field(description="USD/hour for all nodes (= hourly_cost)")
    hourly_cost_per_node: float = Field(description="USD/hour for one node, 6 decimals")


class TaskPlacement(Document):
    name: str
    placement: PricedPlacement
    alternatives: list[PricedPlacement] = Field(description="the next best, cheapest first")
    reason: str = Field(description="one line: why this placement won")


class ResourceChange(Document):
    address: str
    type: str
    actions: list[Literal["create", "delete", "update", "no-op", "read"]] = Field(
        description='terraform-style; ["delete", "create"] for a replacement')
    inputs: dict[str, Any] | None = Field(
        default=None, description="an offline preview's inputs of the resource")


class StackDiff(Document):
    """One cluster's engine diff (``skyc plan``)."""

    cluster: str
    task: str
    engine: str
    preview: Literal["engine", "offline"] | None
    status: Literal["ok", "unavailable"]
    has_changes: bool | None
    summary: dict[str, int] = Field(description="resources per action")
    resource_changes: list[ResourceChange]
    note: str | None


class CompiledStack(Document):
    """One stack ``skyc compile`` wrote: its main file, relative to the output folder."""

    cluster: str = Field(description="the cluster's name; storage-<bucket> for the stack of "
                         "a bucket the task creates")
    task: str
    path: str
    engine: str = Field(default="terraform", description="absent: terraform")


class CheaperElsewhere(Document):
    clouds: list[str]
    hourly_cost_total: float
    egress_cost: float
    enable: list[str] = Field(description="how to enable each cloud")
    compared_by: Literal["run", "hour"] | None = None
    cost: float | None = None
    this_plan_cost: float | None = None


class ServiceCost(Document):
    """A service task's replicas and what they cost per hour, from the fewest to the
    most it may run (``hourly_high`` null when an on-demand price it needs is unknown)."""

    task: str
    min_replicas: int
    max_replicas: int
    ondemand_base: int = Field(description="replicas of a spot service always on demand")
    dynamic_ondemand_fallback: bool
    replica_hourly: float = Field(description="USD/hour of one replica as planned")
    replica_ondemand_hourly: float | None
    hourly_low: float
    hourly_high: float | None
    controller: str = Field(description="where the controller and load balancer run")
    served: bool = Field(description="whether `skyc serve up` runs the replicas where "
                         "the plan places them (local only in this version)")


class BucketNote(Document):
    """A bucket a task mounts: created, used again (skyc created it before) or read."""

    task: str
    cluster: str
    target: str = Field(description="where on the nodes")
    url: str
    store: str
    mode: Literal["MOUNT", "COPY", "MOUNT_CACHED"]
    action: Literal["create", "reuse", "read"]
    persistent: bool = Field(description="a created bucket outlives its cluster")
    region: str | None = Field(default=None, description=(
        "since 2.4: where the bucket is or is created; null: not known (a bucket read "
        "as it is)"))
    storage_price: float | None = Field(default=None, description=(
        "since 2.4: USD per GB-month of the store's standard class in region (the "
        "store's default when the region is not listed or not known); null: no price in "
        "the catalog"))
    storage_price_basis: Literal["region", "default", "global"] | None = Field(
        default=None, description=("since 2.4: region: the region's own price; default: "
                                   "the store's default; global: the store's one price"))
    storage_gb: float | None = Field(default=None, description=(
        "since 2.4: a created bucket's size, as the GB the task reads from it "
        "(_metadata.skyc.reads); null: not given"))
    monthly_storage_cost: float | None = Field(default=None, description=(
        "since 2.4: USD a month for storage_gb at storage_price, 2 decimals; null "
        "without a size"))


class Notes(Document):
    plan_only: list[str] | None = None
    skipped: list[str] | None = None
    cheaper_elsewhere: CheaperElsewhere | None = None
    apply_refusals: list[str] | None = None
    services: list[ServiceCost] | None = Field(default=None, description="since 2.2")
    buckets: list[BucketNote] | None = Field(default=None, description="since 2.3")


class Money(Document):
    hourly: float = Field(description="USD/hour, 6 decimals")
    monthly: float = Field(description="USD for hours_per_month hours, 2 decimals")


class ClusterCost(Document):
    cluster: str
    task: str
    before: Money
    after: Money
    delta: Money
    run_total: float | None = Field(default=None, description="USD for --hours N")


class TotalCost(Document):
    before: Money
    after: Money
    delta: Money
    basis: Literal["peak", "all at once"]
    at_once: list[str] = Field(description="the clusters counted in after")
    run_total: float | None = None
    hours: float | None = None


class CostSection(Document):
    clusters: list[ClusterCost]
    total: TotalCost
    hours_per_month: float


class PolicyViolation(Document):
    rule: str
    cluster: str | None
    message: str


class PolicyResult(Document):
    file: str
    ok: bool
    violations: list[PolicyViolation]


class PlanDocument(Document):
    format_version: versions.PlanVersion
    tasks: list[TaskPlacement]
    hourly_cost: float = Field(description="USD/hour at the peak (peak_tasks together)")
    hourly_cost_total: float = Field(description="the same as hourly_cost")
    peak_tasks: list[int]
    peak_accelerator_tasks: list[int]
    optimize: Literal["cost", "time"]
    objective: Literal["hourly", "run"]
    catalog: CatalogSource | None
    egress_cost: float = Field(description="USD for data moved between a pipeline's tasks")
    stacks: list[StackDiff | CompiledStack] | None = None
    notes: Notes | None = None
    run_cost: RunCost | None = None
    cost: CostSection | None = Field(default=None, description="skyc plan only")
    policy: PolicyResult | None = Field(default=None, description="skyc plan only")


TITLE = ("skyc plan document (skyc plan --format json; skyc compile's plan.json), "
         f"format_version {versions.PLAN}")
