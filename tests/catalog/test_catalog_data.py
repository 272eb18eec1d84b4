"""Every cloud of the bundled price catalogs has the rest of its catalog data: data
transfer prices and the pattern that reads an instance type's CPU family."""

from __future__ import annotations

import pytest

from skyc.catalog import egress, families
from skyc.catalog.store import bundled_clouds


def test_the_bundled_snapshot_holds_the_priced_clouds() -> None:
    assert set(bundled_clouds()) == {"aws", "azure", "gcp"}


@pytest.mark.parametrize("cloud", bundled_clouds())
def test_each_priced_cloud_has_egress_prices_and_a_family_pattern(cloud: str) -> None:
    assert egress.internet_egress_cost(cloud, 2048) > 0
    assert egress.egress_cost(cloud, "a", cloud, "b", 100) > 0
    assert families.default_families()[cloud]
    assert families.family(cloud, "not a type") is None


@pytest.mark.parametrize(("cloud", "gb", "usd"), [
    ("aws", 1, 0.0), ("aws", 11, 0.9), ("aws", 200 * 1024, 0.05 * 200 * 1024),
    ("azure", 5, 0.0), ("azure", 15, 0.875),
    ("gcp", 100, 12.0), ("gcp", 2048, 0.11 * 2048), ("gcp", 20000, 0.08 * 20000),
    ("local", 100, 0.0), ("kubernetes", 100, 0.0),
])
def test_internet_egress_follows_the_list_prices(cloud: str, gb: float, usd: float) -> None:
    assert egress.internet_egress_cost(cloud, gb) == pytest.approx(usd)


def test_the_default_family_of_each_cloud_is_read_from_its_type_names() -> None:
    assert families.family("aws", "m6i.2xlarge") == "m6i"
    assert families.family("gcp", "n2-standard-8") == "n2-standard"
    assert families.family("azure", "Standard_D8s_v5") == "Ds_v5"
