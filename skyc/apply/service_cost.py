"""What a service task costs: its replicas (each a cluster at the task's placement),
from the fewest to the most it may run, with SkyPilot's spot fallbacks.

- ``replicas: N``: N replicas always; ``replica_policy``: ``min_replicas`` up to
  ``max_replicas`` (plus ``num_overprovision``, which SkyPilot keeps above the target);
- with ``use_spot``, ``base_ondemand_fallback_replicas`` of them run on demand always,
  and ``dynamic_ondemand_fallback`` may run every spot replica on demand while spot
  capacity is short: the high end prices them so;
- the controller and the load balancer run on this machine (what ``skyc serve up``
  does in this version): $0/hour.

``skyc serve up`` runs replicas on ``local`` only in this version: a plan that places
them elsewhere says so beside the range.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from skyc.catalog import Catalog
    from skyc.model.plan import Placement, Plan
    from skyc.task import Task

CONTROLLER = "this machine"
SERVED_ON = "local"   # where `skyc serve up` runs replicas in this version


class ServiceCost(NamedTuple):
    task: str
    min_replicas: int
    max_replicas: int
    ondemand_base: int           # replicas always on demand (of a spot service)
    dynamic_fallback: bool       # spot replicas may run on demand while spot is short
    replica_hourly: float        # one replica at the planned price (spot, if spot)
    replica_ondemand: float | None  # one replica on demand (None: the catalog has none)
    low: float                   # USD/hour with the fewest replicas
    high: float | None           # USD/hour with the most (None: an on-demand price unknown)
    cloud: str = SERVED_ON       # where the plan places the replicas

    def document(self) -> dict[str, Any]:
        return {"task": self.task, "min_replicas": self.min_replicas,
                "max_replicas": self.max_replicas, "ondemand_base": self.ondemand_base,
                "dynamic_ondemand_fallback": self.dynamic_fallback,
                "replica_hourly": round(self.replica_hourly, 6),
                "replica_ondemand_hourly": None if self.replica_ondemand is None
                else round(self.replica_ondemand, 6),
                "hourly_low": round(self.low, 6),
                "hourly_high": None if self.high is None else round(self.high, 6),
                "controller": CONTROLLER, "served": self.cloud == SERVED_ON}

    def line(self) -> str:
        count = (str(self.min_replicas) if self.min_replicas == self.max_replicas
                 else f"{self.min_replicas}-{self.max_replicas}")
        extra = []
        if self.ondemand_base:
            extra.append(f"{self.ondemand_base} on demand always")
        if self.dynamic_fallback:
            extra.append("spot ones on demand while spot is short")
        said = f" ({'; '.join(extra)})" if extra else ""
        high = "?" if self.high is None else f"{self.high:.4f}"
        span = f"${self.low:.4f}/hr" if self.high == self.low else \
            f"${self.low:.4f}-{high}/hr"
        served = "" if self.cloud == SERVED_ON else (
            f"; `skyc serve up` runs replicas on {SERVED_ON} only in this version "
            f"(resources.infra: {SERVED_ON}), not on {self.cloud}")
        return (f"service {self.task}: {count} replica(s) at ${self.replica_hourly:.4f}/hr "
                f"each{said}: {span}; controller and load balancer on {CONTROLLER} "
                f"($0/hr){served}")


def _ondemand(placement: Placement, catalog: Catalog) -> float | None:
    """One replica's on-demand price at the placement's offer; the planned price when
    it is not spot."""
    if not placement.use_spot:
        return placement.hourly_cost
    from skyc.catalog.offer import OfferQuery

    offers = catalog.offers(OfferQuery(
        cloud=placement.cloud, region=placement.region, zone=placement.zone,
        instance_type=placement.instance_type, any_accelerator=True))
    prices = [o.price for o in offers if o.price is not None
              and (o.accelerator, o.accelerator_count) == _accelerator(placement)]
    return min(prices) * placement.num_nodes if prices else None


def _accelerator(placement: Placement) -> tuple[str | None, float]:
    if not placement.accelerators:
        return None, 0
    name, count = next(iter(placement.accelerators.items()))
    return name, count


def service_cost(task: Task, placement: Placement, catalog: Catalog) -> ServiceCost | None:
    """The cost range of ``task``'s replicas; None for a task that is no service."""
    spec = task.service
    if spec is None:
        return None
    policy = spec.replica_policy
    low_n = policy.min_replicas if policy is not None else (spec.replicas or 1)
    high_n = (policy.max_replicas or low_n) if policy is not None else low_n
    high_n += (policy.num_overprovision or 0) if policy is not None else 0
    spot = placement.use_spot
    base = min((policy.base_ondemand_fallback_replicas or 0) if policy and spot else 0, high_n)
    dynamic = bool(policy and spot and policy.dynamic_ondemand_fallback)
    each = placement.hourly_cost
    ondemand = _ondemand(placement, catalog)

    def hourly(n: int, all_ondemand: bool) -> float | None:
        on = n if all_ondemand else min(base, n)
        if on and ondemand is None:
            return None
        return (ondemand or 0.0) * on + each * (n - on)

    low = hourly(low_n, False)
    return ServiceCost(task.name or "task", low_n, high_n, base, dynamic, each, ondemand,
                       low if low is not None else each * low_n, hourly(high_n, dynamic),
                       placement.cloud)


def service_costs(tasks: Sequence[Task], plan: Plan, catalog: Catalog) -> list[ServiceCost]:
    """Each service task's cost range, in the plan's order."""
    out = []
    for task, planned in zip(tasks, plan.tasks, strict=False):
        cost = service_cost(task, planned.placement, catalog)
        if cost is not None:
            out.append(cost)
    return out
