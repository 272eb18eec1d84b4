"""The Plan: the optimizer's output, versioned and JSON-serializable.

``skyc plan --format json`` prints ``Plan.model_dump(mode="json")`` (later
stages add a ``stacks`` key next to ``tasks``). A placement's ``hourly_cost`` is
always the total for all of a task's nodes; the plan's is what the tasks that run at
the same time cost together at the peak.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

PLAN_FORMAT_VERSION = "1.0"


class Placement(BaseModel):
    """Where one task runs: one offer times ``num_nodes``."""

    # defer_build: validators are built on first use (a command that only carries a
    # placement, such as exec, builds none).
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    cloud: str                                  # aws, gcp, azure, kubernetes, local, ssh
    region: str | None = None                   # for ssh: the pool name
    zone: str | None = None
    instance_type: str | None = None            # GCP: the host VM type
    accelerators: dict[str, float] | None = None  # {"A100": 8}; None for CPU-only
    use_spot: bool = False
    num_nodes: int = 1
    hourly_cost: float                          # USD/hour for all nodes together
    vcpus: float | None = None                  # per node
    memory_gib: float | None = None             # per node
    accelerator_memory_gib: float | None = None  # per accelerator, when known
    arch: str | None = None                     # x86_64 / arm64
    candidate_index: int = 0                    # which ResourceCandidate of the task this satisfies

    @property
    def total_accelerators(self) -> float:
        """The accelerators of all nodes together (0 for a CPU-only placement)."""
        return sum((self.accelerators or {}).values()) * self.num_nodes

    @property
    def infra(self) -> str:
        """``cloud/region/zone`` as far as known, e.g. ``aws/us-east-1/use1-az1``."""
        parts = [self.cloud] + [p for p in (self.region, self.zone) if p and p != self.cloud]
        return "/".join(parts)

    @property
    def short_infra(self) -> str:
        """``infra`` without the region when the zone's name already holds it
        (``gcp/us-central1-a`` for ``gcp/us-central1/us-central1-a``)."""
        if self.region and self.zone and self.zone.startswith(self.region):
            return f"{self.cloud}/{self.zone}"
        return self.infra


class TaskPlan(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    name: str
    placement: Placement
    alternatives: list[Placement] = Field(default_factory=list)
    reason: str = ""                            # one line: why this placement won


class CatalogSource(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    source: str                                 # "bundled" or a directory / URL
    date: str                                   # snapshot date, ISO 8601


class Plan(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    format_version: str = PLAN_FORMAT_VERSION
    tasks: list[TaskPlan]
    # USD/hour at the peak: the dearest set of tasks that run at the same time
    # (``peak_tasks``, indices into ``tasks``): a chain's dearest step, or every task
    # of a plan whose tasks run at once. Never the steps of a pipeline added up.
    hourly_cost: float
    peak_tasks: list[int] = Field(default_factory=list)
    # The tasks that hold the most accelerators at the same time (what a GPU quota
    # counts): a chain's largest step, or every task of a plan whose tasks run at once.
    peak_accelerator_tasks: list[int] = Field(default_factory=list)
    optimize: str = "cost"                      # cost | time
    # "hourly": ranked per hour (or by the time model's reference job); "run": every
    # task had a duration, so the whole run's cost (or time) was minimised.
    objective: str = "hourly"
    catalog: CatalogSource | None = None
    egress_cost: float = 0.0                    # USD for data moved between tasks (pipelines)
