"""A table answers a query by accelerator, by instance type or for CPU-only offers
from its index: the same offers, in the same order, as filtering every offer."""

from __future__ import annotations

import pytest

from skyc.catalog import OfferQuery, load_catalog
from tests.optimizer.helpers import SMALL_CATALOG


@pytest.mark.parametrize("cloud", ["aws", "gcp", "azure"])
def test_indexed_queries_match_a_filtered_scan(cloud: str) -> None:
    table = load_catalog(SMALL_CATALOG, clouds=[cloud]).table(cloud)
    assert table is not None
    every = list(table.query(OfferQuery(any_accelerator=True)))
    accelerated = next(o for o in every if o.accelerator and o.instance_type)
    typed = next(o for o in every if o.accelerator is None and o.instance_type)
    cases = [
        (OfferQuery(accelerator=accelerated.accelerator),
         lambda o: o.accelerator == accelerated.accelerator),
        (OfferQuery(instance_type=typed.instance_type, any_accelerator=True),
         lambda o: o.instance_type == typed.instance_type),
        (OfferQuery(cpus=(4, True)),
         lambda o: o.accelerator is None and (o.vcpus is None or o.vcpus >= 4)),
    ]
    for query, keep in cases:
        got = list(table.query(query))
        assert got, query
        assert got == [o for o in every if keep(o)], query
