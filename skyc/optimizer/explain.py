"""Why a candidate has no feasible offer, and the nearest offers that exist."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from skyc.catalog.offer import Offer, OfferQuery
from skyc.errors import InfeasibleError, SkycError
from skyc.optimizer.blocked import Blocked
from skyc.optimizer.feasible import build_query, matching_offers, merge_infra
from skyc.optimizer.ports import CatalogLike
from skyc.task.candidate import ResourceCandidate

Where = tuple[str | None, str | None, str | None]  # cloud, region, zone


def describe(cand: ResourceCandidate, num_nodes: int = 1, *, where: bool = True) -> str:
    parts = []
    acc = cand.accelerator
    if acc is not None:
        what = acc.name or f"{acc.min_memory_gib:g}GB+"
        parts.append(f"{what}:{acc.count:g}")
    if cand.cpus:
        parts.append(f"cpus {cand.cpus.value:g}{'+' if cand.cpus.at_least else ''}")
    if cand.memory:
        parts.append(f"memory {cand.memory.value:g}{'+' if cand.memory.at_least else ''}")
    if cand.instance_type:
        parts.append(cand.instance_type)
    if cand.use_spot:
        parts.append("spot")
    pinned = "/".join(p for p in (cand.infra.cloud, cand.infra.region, cand.infra.zone) if p)
    if pinned and where:
        parts.append(f"in {pinned}")
    if num_nodes > 1:
        parts.append(f"x{num_nodes} nodes")
    return " ".join(parts) or "default CPU node"


def _nearest(offers: Sequence[Offer], spot: bool, n: int = 3) -> str:
    priced = sorted((o for o in offers if o.hourly(spot) is not None),
                    key=lambda o: (o.hourly(spot) or 0.0, o.infra))
    out = []
    for o in priced[:n]:
        acc = f" {o.accelerator}:{o.accelerator_count:g}" if o.accelerator else ""
        price = f"${o.hourly(spot):.4g}/hr/node"
        out.append(f"{o.infra} {o.instance_type or ''}{acc} {price}".strip())
    return "; ".join(out)


def _unknown_region(catalog: CatalogLike, cloud: str | None, region: str | None) -> str | None:
    """A region the cloud's catalog does not know at all, with the nearest names."""
    from skyc.catalog.accelerators import nearest_names

    places_of = getattr(catalog, "places", None)
    if cloud is None or region is None or places_of is None:
        return None
    places = places_of(cloud)
    regions = {r for r, _ in places or ()}
    if not regions or region in regions:
        return None
    near = nearest_names(region, regions)
    return (f"unknown region '{region}' for {cloud}"
            + (f" (did you mean {', '.join(near)}?)" if near else ""))


def reason(cand: ResourceCandidate, num_nodes: int, catalog: CatalogLike,
           blocked: Sequence[Blocked], infra: Where) -> str:
    """One sentence: what cannot be met, and what is nearest."""
    where = merge_infra(cand, infra)
    if where is None:
        return f"the task asks for {cand.infra.cloud} but --infra restricts to {infra[0]}"
    unusable = _cloud_unusable(catalog, where[0])
    if unusable:
        return unusable
    try:
        q = build_query(cand, catalog, where)
    except SkycError as exc:
        return str(exc)
    anywhere = q._replace(cloud=None, region=None, zone=None, cheapest=None)
    shape = _accelerator_count(cand, num_nodes, catalog, q, anywhere)
    if shape:
        return shape
    if q.instance_type is not None and not catalog.offers(
            OfferQuery(instance_type=q.instance_type, any_accelerator=True)):
        return f"no instance type '{q.instance_type}' in the catalog"
    everywhere = matching_offers(anywhere, cand, catalog)
    if not everywhere:
        return _nothing_matches(cand, catalog, anywhere)
    if cand.use_spot and all(o.spot_price is None for o in everywhere):
        return f"no spot offer for {describe(cand)}; on demand: {_nearest(everywhere, False)}"
    return _not_here(cand, num_nodes, catalog, blocked, q, where, everywhere)


def _cloud_unusable(catalog: CatalogLike, cloud: str | None) -> str | None:
    """Why the cloud asked for cannot be planned on: not enabled, or no catalog."""
    if cloud is None or cloud in catalog.clouds:
        return None
    hint = getattr(catalog, "empty_hints", {}).get(cloud)
    if hint:
        return str(hint)
    return f"'{cloud}' is not enabled or has no catalog (have: {', '.join(catalog.clouds)})"


def _accelerator_count(cand: ResourceCandidate, num_nodes: int, catalog: CatalogLike,
                       q: OfferQuery, anywhere: OfferQuery) -> str | None:
    """The accelerator count asked for is one no instance has (too many for one node, or
    not one of the counts it comes in)."""
    acc = cand.accelerator
    if q.accelerator is None or acc is None:
        return None
    sizes = catalog.offers(anywhere._replace(accelerator_count=None, cpus=None,
                                             memory_gib=None, instance_type=None))
    counts = sorted({o.accelerator_count for o in sizes if o.elastic})
    if any(not o.elastic and o.accelerator_count >= acc.count for o in sizes):
        counts = []  # a fixed machine has enough: the count is not the problem
    if counts and acc.count > counts[-1]:
        need = math.ceil(acc.count / counts[-1]) * num_nodes
        return (f"no instance has {acc.count:g} {q.accelerator} in one node; the largest has "
                f"{counts[-1]:g}; use num_nodes: {need} with {q.accelerator}:{counts[-1]:g}")
    if counts and acc.count not in counts:
        return (f"{q.accelerator} comes in counts of "
                f"{', '.join(f'{c:g}' for c in counts)} per node, not {acc.count:g}")
    return None


def _nothing_matches(cand: ResourceCandidate, catalog: CatalogLike,
                     anywhere: OfferQuery) -> str:
    """No offer anywhere: the vCPUs or memory asked for are more than any offer has, or
    nothing in the catalog is like it at all."""
    relaxed = catalog.offers(anywhere._replace(cpus=None, memory_gib=None))
    if not relaxed:
        return f"nothing in the catalog matches {describe(cand)}"
    top_cpu = max((o.vcpus or 0) for o in relaxed)
    top_mem = max((o.memory_gib or 0) for o in relaxed)
    return (f"no offer has that many vCPUs/memory for {describe(cand)}: the largest has "
            f"{top_cpu:g} vCPUs and {top_mem:g} GiB; nearest: {_nearest(relaxed, cand.use_spot)}")


def _not_here(cand: ResourceCandidate, num_nodes: int, catalog: CatalogLike,
              blocked: Sequence[Blocked], q: OfferQuery, where: Where,
              everywhere: Sequence[Offer]) -> str:
    """Offers exist somewhere: why none is usable where the task asks for one."""
    spot = cand.use_spot
    here = matching_offers(q._replace(cheapest=None), cand, catalog)
    if not here:
        return _unknown_region(catalog, where[0], where[1]) or (
            f"no offer for {describe(cand, where=False)} in "
            f"{'/'.join(p for p in where if p)}; nearest "
            f"elsewhere: {_nearest(everywhere, spot)}")
    if spot and all(o.spot_price is None for o in here):
        return f"no spot price for {describe(cand)} there; on demand: {_nearest(here, False)}"
    pool = [o for o in here if o.max_nodes is None or num_nodes <= o.max_nodes]
    if not pool:
        most = max(o.max_nodes or 0 for o in here)
        return f"num_nodes {num_nodes} exceeds the {most} host(s) available"
    shown = ", ".join(str(b) for b in blocked)
    return f"all {len(here)} offers for {describe(cand)} are blocked ({shown})"


def infeasible(task_name: str, cands: Sequence[ResourceCandidate], num_nodes: int,
               catalog: CatalogLike, blocked: Sequence[Blocked],
               infra: tuple[str | None, str | None, str | None],
               known: Mapping[int, str] | None = None) -> InfeasibleError:
    """Why no candidate of the task has a placement; ``known``: the reason for some
    candidates (by index), already found (e.g. every offer needs a reservation)."""
    known = known or {}
    lines = [f"task '{task_name}': no feasible placement"]
    for c in cands:
        why = known.get(c.index) or reason(c, num_nodes, catalog, blocked, infra)
        lines.append(f"  candidate {c.index} ({describe(c, num_nodes)}): {why}")
    hint = "relax the resources, pick another infra, or unblock placements"
    if known and all(c.index in known for c in cands):
        hint = "name a reservation in the config, or use spot (use_spot: true)"
    elif not catalog.priced_clouds:
        hint = ("only infra without a price catalog is enabled "
                f"({', '.join(catalog.clouds) or 'none'}): name a cloud with --infra aws|gcp|azure "
                "(planning needs no credentials), or list clouds under `infra:` in "
                "$SKYC_HOME/config.yaml; `skyc check` shows what is enabled and why")
    return InfeasibleError("\n".join(lines), hint=hint)
