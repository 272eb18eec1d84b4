"""Feasibility: every offer that satisfies one ``ResourceCandidate``.

Rules: accelerators by canonical name and exact count per node (fixed machines
need at least that many), ``80GB+`` memory asks; cpus/memory exact or at least;
``instance_type``; ``use_spot`` needs a spot price (priced per zone); infra
pinning (cloud/region/zone) from the candidate and from ``--infra``; blocked
placements; ``num_nodes`` within what a fixed pool has.

Offers priced far below the same instance type elsewhere
(``catalog.suspicious``) are left out unless the candidate pins that instance
type and region.

CPU-only candidates that name no instance type are placed on each cloud's
default CPU families, as SkyPilot places them (:func:`matching_offers`).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from skyc.catalog.families import DEFAULT_CPUS, MEMORY_PER_VCPU
from skyc.catalog.offer import Offer, OfferQuery
from skyc.errors import InfeasibleError
from skyc.optimizer.blocked import Blocked
from skyc.optimizer.choice import Choice
from skyc.optimizer.ports import CatalogLike
from skyc.optimizer.timemodel import estimated_hours
from skyc.task._parse import canonical_cloud
from skyc.task.candidate import ResourceCandidate

Infra = tuple[str | None, str | None, str | None]


def merge_infra(cand: ResourceCandidate, infra: tuple[str | None, str | None, str | None]
                ) -> tuple[str | None, str | None, str | None] | None:
    """The candidate's infra narrowed by ``--infra``; None when they contradict."""
    def cloud(name: str | None) -> str | None:
        return None if name is None else canonical_cloud(name)

    mine = (cloud(cand.infra.cloud), cand.infra.region, cand.infra.zone)
    asked = (cloud(infra[0]), infra[1], infra[2])
    out: list[str | None] = []
    for a, b in zip(mine, asked, strict=True):
        if a is not None and b is not None and a != b:
            return None
        out.append(a if a is not None else b)
    return out[0], out[1], out[2]


def build_query(cand: ResourceCandidate, catalog: CatalogLike,
                where: tuple[str | None, str | None, str | None]) -> OfferQuery:
    acc = cand.accelerator
    name = None
    if acc is not None and acc.name is not None:
        name = catalog.canonical_accelerator(acc.name)
        if name is None:
            raise unknown_accelerator(acc.name, catalog)
    return OfferQuery(
        cloud=where[0], region=where[1], zone=where[2], instance_type=cand.instance_type,
        accelerator=name,
        accelerator_count=acc.count if acc is not None else None,
        min_accelerator_memory_gib=acc.min_memory_gib if acc is not None else None,
        cpus=(cand.cpus.value, cand.cpus.at_least) if cand.cpus else None,
        memory_gib=(cand.memory.value, cand.memory.at_least) if cand.memory else None,
        cheapest="spot" if cand.use_spot else "price",
        any_accelerator=acc is None and cand.instance_type is not None,
    )


def unknown_accelerator(asked: str, catalog: CatalogLike) -> InfeasibleError:
    """Why an accelerator name matched nothing: clouds that offer it are not among the
    infra considered (no credentials here), or no cloud has it (the nearest names)."""
    from skyc.catalog import load_catalog
    from skyc.catalog.accelerators import nearest_names

    considered = ", ".join(catalog.clouds) or "none"
    everywhere = load_catalog()
    canonical = everywhere.canonical_accelerator(asked)
    if canonical is not None:
        offering = sorted(c for c in everywhere.clouds
                          if (t := everywhere.table(c)) is not None
                          and canonical in t.accelerator_names())
        return InfeasibleError(
            f"{canonical} is offered by {', '.join(offering)}, none of which is enabled "
            f"here (infra considered: {considered})",
            hint=f"set up credentials for one of them (`skyc check` shows what is enabled "
            f"and why), or plan without credentials with --infra {offering[0]}")
    near = nearest_names(asked, {*catalog.accelerator_names().values(),
                                 *everywhere.accelerator_names().values()})
    return InfeasibleError(
        f"no accelerator named '{asked}' in the catalog"
        + (f" (did you mean {', '.join(near)}?)" if near else ""),
        hint="`skyc show-gpus -a` lists every accelerator")


def _cpu_only(cand: ResourceCandidate) -> bool:
    return cand.accelerator is None and cand.instance_type is None


def matching_offers(query: OfferQuery, cand: ResourceCandidate, catalog: CatalogLike
                    ) -> list[Offer]:
    """The offers for ``cand``. A CPU-only candidate that names no instance type is
    placed as SkyPilot places it: on each cloud's default CPU families
    (``catalog.families``), with at least 8 vCPUs when it gives neither cpus nor
    memory and at least 4 GiB per vCPU when it gives no memory; on a cloud where no
    type of those families fits, on any type that meets the candidate's own cpus and
    memory. Fixed machines (this machine, SSH pools, Kubernetes) are taken as they are."""
    if not _cpu_only(cand):
        return catalog.offers(query)
    fixed = catalog.offers(query._replace(kind="fixed"))
    own = query._replace(kind="elastic")
    if cand.cpus is None and cand.memory is None:
        own = own._replace(cpus=DEFAULT_CPUS)
    defaults = catalog.offers(own._replace(
        default_families_only=True,
        min_memory_per_vcpu=MEMORY_PER_VCPU if cand.memory is None else None))
    have = {o.cloud for o in defaults}
    clouds = [query.cloud] if query.cloud else catalog.clouds
    rest = [o for c in clouds if c not in have for o in catalog.offers(own._replace(cloud=c))]
    return defaults + rest + fixed


def feasibility_key(cand: ResourceCandidate) -> Hashable:
    """Everything of ``cand`` that :func:`candidate_choices` reads: candidates equal in
    it have equal choices (given the same node count, catalog, blocked and infra).
    Disk, ports, image and labels are the compilers' business, not the optimizer's."""
    acc = cand.accelerator
    cpus, mem, where = cand.cpus, cand.memory, cand.infra
    return (
        cand.index, cand.preference, where.cloud, where.region, where.zone,
        None if acc is None else (acc.name, acc.count, acc.min_memory_gib),
        None if cpus is None else (cpus.value, cpus.at_least),
        None if mem is None else (mem.value, mem.at_least),
        cand.instance_type, cand.use_spot,
    )


def task_choices(cands: Sequence[ResourceCandidate], num_nodes: int, catalog: CatalogLike, *,
                 blocked: Sequence[Blocked] = (), infra: Infra = (None, None, None)
                 ) -> list[Choice]:
    """Every feasible choice over all of a task's candidates."""
    out: list[Choice] = []
    for cand in cands:
        try:
            out.extend(candidate_choices(cand, num_nodes, catalog, blocked=blocked, infra=infra))
        except InfeasibleError:
            continue  # e.g. an unknown accelerator name: explained if nothing is feasible
    return out


def candidate_choices(cand: ResourceCandidate, num_nodes: int, catalog: CatalogLike, *,
                      blocked: Sequence[Blocked] = (),
                      infra: tuple[str | None, str | None, str | None] = (None, None, None),
                      ) -> list[Choice]:
    """Every feasible choice for one candidate (cheapest offer per zone)."""
    where = merge_infra(cand, infra)
    if where is None:
        return []
    offers = matching_offers(build_query(cand, catalog, where), cand, catalog)
    if not (cand.instance_type and where[1]):
        # A price far below the same type elsewhere looks like a catalog error: not
        # picked unless the task pins that instance type and region.
        from skyc.catalog.suspicious import suspicious_offers

        median = getattr(catalog, "median_price", None)
        odd = suspicious_offers(offers, median) if median is not None else set()
        offers = [o for o in offers if o not in odd]
    out = []
    for o in offers:
        if o.max_nodes is not None and num_nodes > o.max_nodes:
            continue
        if any(b.matches(o.cloud, o.region, o.zone) for b in blocked):
            continue
        price = o.hourly(cand.use_spot)
        if price is None:
            continue
        acc = None
        used = o
        if o.accelerator and o.elastic:
            acc = {o.accelerator: o.accelerator_count}
        elif o.accelerator and cand.accelerator is not None:
            # a fixed machine: the task gets what it asked for, not the whole machine
            acc = {o.accelerator: cand.accelerator.count}
            used = o._replace(accelerator_count=cand.accelerator.count)
        elif not o.elastic:
            used = o._replace(accelerator=None, accelerator_count=0)
        out.append(Choice(
            offer=o, candidate_index=cand.index, preference=cand.preference,
            num_nodes=num_nodes, use_spot=cand.use_spot, hourly_cost=price * num_nodes,
            hours=estimated_hours(used, num_nodes), accelerators=acc,
        ))
    return out
