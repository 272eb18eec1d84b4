"""Prices that look like catalog errors: far below the same instance type elsewhere.

An offer is suspicious when its on-demand price is below ``SUSPICIOUS_RATIO``
times the median price of the same instance type (same cloud, same accelerators)
over at least ``MIN_REGIONS`` regions. The optimizer leaves such offers out
unless the task pins that instance type and region; plan and show-gpus flag them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from skyc.catalog.offer import Offer

SUSPICIOUS_RATIO = 0.4
MIN_REGIONS = 3


def suspicious_offers(offers: Iterable[Offer],
                      median: Callable[[Offer, int], float | None]) -> set[Offer]:
    """The offers among ``offers`` priced below ``SUSPICIOUS_RATIO`` times their
    type's median price (``median(offer, MIN_REGIONS)``, e.g. ``Catalog.median_price``)."""
    out = set()
    for o in offers:
        if not (o.elastic and o.instance_type and o.price):
            continue
        typical = median(o, MIN_REGIONS)
        if typical is not None and o.price < SUSPICIOUS_RATIO * typical:
            out.add(o)
    return out
