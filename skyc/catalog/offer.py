"""What the optimizer sees: offers, and the query that selects them.

Both are named tuples, as are the other records on the path of every command (a
choice, a target's capabilities, a spec problem): a dataclass's methods are compiled
when its module is imported, a named tuple's in a fraction of that
(benchmarks/bench_startup.py measures the start). ``offer._replace(...)`` makes a changed copy."""

from __future__ import annotations

from typing import Literal, NamedTuple


class Offer(NamedTuple):
    """One purchasable node shape in one place, with its prices (USD/hour, one node).

    ``price`` is the on-demand price, ``spot_price`` the spot price; either may be
    None when the catalog has none. ``elastic`` is True for cloud offers (the node
    size is chosen from a menu) and False for fixed machines (local, SSH pools).
    ``max_nodes`` bounds ``num_nodes`` (an SSH pool has as many nodes as hosts).
    ``default_family`` marks a default CPU family of its cloud (``families``).
    """

    cloud: str
    region: str
    zone: str | None
    instance_type: str | None
    accelerator: str | None
    accelerator_count: float
    accelerator_memory_gib: float | None
    vcpus: float | None
    memory_gib: float | None
    price: float | None
    spot_price: float | None
    arch: str | None = None
    elastic: bool = True
    default_family: bool = False
    max_nodes: int | None = None
    # The config prefers this offer over cheaper ones (a team's own cluster).
    preferred: bool = False

    @property
    def infra(self) -> str:
        return "/".join(p for p in (self.cloud, self.region, self.zone) if p)

    def hourly(self, use_spot: bool) -> float | None:
        return self.spot_price if use_spot else self.price


class OfferQuery(NamedTuple):
    """A filter over offers. None means "any" for every field.

    ``accelerator`` is a canonical name (see ``accelerators.canonical_name``);
    ``accelerator_count`` is exact. ``cpus``/``memory_gib`` are (value, at_least).
    ``cheapest`` keeps, per (region, zone, accelerator, count), only the cheapest
    offer by on-demand or spot price (ties: instance type name), and drops offers
    without that price: what a cost or time ranking needs. ``kind`` selects cloud
    offers (``elastic``), fixed machines (``fixed``) or both.
    ``default_families_only`` keeps the default CPU families (``families``) and
    ``min_memory_per_vcpu`` the types with at least that many GiB per vCPU.
    ``any_accelerator`` lists every offer regardless of its accelerators (used by
    ``show-gpus``, the nearest-offer hints and instance-type asks); otherwise a
    query without an accelerator returns CPU-only offers.
    """

    cloud: str | None = None
    region: str | None = None
    zone: str | None = None
    instance_type: str | None = None
    accelerator: str | None = None
    accelerator_count: float | None = None
    min_accelerator_memory_gib: float | None = None
    cpus: tuple[float, bool] | None = None
    memory_gib: tuple[float, bool] | None = None
    any_accelerator: bool = False
    default_families_only: bool = False
    min_memory_per_vcpu: float | None = None
    cheapest: Literal["price", "spot"] | None = None  # keep only the cheapest per place
    kind: Literal["any", "elastic", "fixed"] = "any"


def quantity_ok(have: float | None, want: tuple[float, bool] | None) -> bool:
    """Whether ``have`` meets ``want`` (exact or at least). Unknown sizes pass."""
    if want is None or have is None:
        return True
    value, at_least = want
    if at_least:
        return have >= value - 1e-9
    return abs(have - value) < 1e-6
