"""A Choice: one offer for one task candidate, with its cost, time and ranking key.

Ranking key (lower is better; ties break deterministically in this order):
``(preference, not preferred offer, objective, other objective, cloud, region, zone,
instance type, candidate index)``; the objective is the hourly cost for ``--optimize
cost`` and the estimated hours for ``--optimize time``. An offer the config marks
``preferred`` (a team's own cluster) wins over cheaper or faster ones.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

from skyc.catalog.offer import Offer
from skyc.model.plan import Placement

Target = Literal["cost", "time"]


class Choice(NamedTuple):
    offer: Offer
    candidate_index: int
    preference: int
    num_nodes: int
    use_spot: bool
    hourly_cost: float          # all nodes
    hours: float                # time model (see timemodel)
    accelerators: dict[str, float] | None
    run_hours: float | None = None  # the task's duration on this offer, when known
    data_cost: float = 0.0      # egress of reading the task's data here (USD, once)

    @property
    def run_cost(self) -> float | None:
        return None if self.run_hours is None else self.hourly_cost * self.run_hours

    def objective(self, target: Target) -> float:
        if self.run_hours is not None:
            if target == "cost":
                return self.hourly_cost * self.run_hours + self.data_cost
            return self.run_hours
        return self.hourly_cost + self.data_cost if target == "cost" else self.hours

    def key(self, target: Target) -> tuple[int, bool, float, float, str, str, str, str, int]:
        other = self.objective("time" if target == "cost" else "cost")
        o = self.offer
        return (self.preference, not o.preferred, round(self.objective(target), 9),
                round(other, 9), o.cloud, o.region, o.zone or "", o.instance_type or "",
                self.candidate_index)

    @property
    def location(self) -> tuple[str, str]:
        return (self.offer.cloud, self.offer.region)

    def placement(self) -> Placement:
        o = self.offer
        return Placement(
            cloud=o.cloud, region=o.region, zone=o.zone, instance_type=o.instance_type,
            accelerators=self.accelerators, use_spot=self.use_spot, num_nodes=self.num_nodes,
            hourly_cost=round(self.hourly_cost, 6), vcpus=o.vcpus, memory_gib=o.memory_gib,
            accelerator_memory_gib=o.accelerator_memory_gib, arch=o.arch,
            candidate_index=self.candidate_index,
        )
