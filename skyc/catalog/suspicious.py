"""Prices that look like catalog errors: far below the same instance type elsewhere.

An offer is suspicious when its on-demand price is below ``SUSPICIOUS_RATIO``
times the median price of the same instance type (same cloud, same accelerators)
over at least ``MIN_REGIONS`` regions. The optimizer leaves such offers out
unless the task pins that instance type and region; plan and show-gpus flag them.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable

from skyc.catalog.offer import Offer

SUSPICIOUS_RATIO = 0.4
MIN_REGIONS = 3


def suspicious_offers(offers: Iterable[Offer],
                      reference: Iterable[Offer] | None = None) -> set[Offer]:
    """The offers among ``offers`` whose price is far below their type's median
    over ``reference`` (every offer of those types; default ``offers`` itself)."""
    by_type: dict[tuple[str, str, str | None, float], dict[str, float]] = {}
    listed = [o for o in offers if o.elastic and o.instance_type and o.price]
    for o in listed if reference is None else [
            r for r in reference if r.elastic and r.instance_type and r.price]:
        key = (o.cloud, o.instance_type or "", o.accelerator, o.accelerator_count)
        regions = by_type.setdefault(key, {})
        price = float(o.price or 0.0)
        regions[o.region] = min(price, regions.get(o.region, price))
    medians = {k: statistics.median(v.values()) for k, v in by_type.items()
               if len(v) >= MIN_REGIONS}
    out = set()
    for o in listed:
        median = medians.get((o.cloud, o.instance_type or "", o.accelerator,
                              o.accelerator_count))
        if median is not None and float(o.price or 0.0) < SUSPICIOUS_RATIO * median:
            out.add(o)
    return out
