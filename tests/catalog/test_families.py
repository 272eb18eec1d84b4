"""Each cloud's default CPU families (catalog data) and how a type's family is read."""

from __future__ import annotations

import pytest

from skyc.catalog import families, load_catalog
from skyc.catalog.offer import OfferQuery


@pytest.mark.parametrize(("cloud", "name", "family", "default"), [
    ("aws", "m6i.2xlarge", "m6i", True),
    ("aws", "c6i.metal", "c6i", True),
    ("aws", "m6id.2xlarge", "m6id", False),  # instance storage: another family
    ("aws", "m6a.2xlarge", "m6a", False),
    ("gcp", "n2-standard-8", "n2-standard", True),
    ("gcp", "n4-highcpu-16", "n4-highcpu", True),
    ("gcp", "n2d-standard-8", "n2d-standard", False),
    ("gcp", "e2-highcpu-8", "e2-highcpu", False),
    ("azure", "Standard_D8s_v5", "Ds_v5", True),
    ("azure", "Standard_E16s_v5", "Es_v5", True),
    ("azure", "Standard_F8s_v2", "Fs_v2", True),
    ("azure", "Standard_D8as_v5", "Das_v5", False),
    ("azure", "Standard_B8pls_v2", "Bpls_v2", False),
    ("azure", "Standard_E8-4s_v5", None, False),  # constrained vCPUs
    ("local", "m6i.2xlarge", None, False),
])
def test_a_type_s_family(cloud: str, name: str, family: str | None, default: bool) -> None:
    assert families.family(cloud, name) == family
    assert families.is_default(cloud, name) is default


def test_the_families_are_skypilot_s() -> None:
    got = families.default_families()
    assert got["aws"] == {"m6i", "m7i", "r6i", "r7i", "c6i", "c7i"}
    assert got["gcp"] == {"n2-standard", "n2-highmem", "n2-highcpu",
                          "n4-standard", "n4-highmem", "n4-highcpu"}
    assert got["azure"] == {"Ds_v5", "Es_v5", "Fs_v2"}


def test_the_bundled_catalog_offers_each_cloud_s_default_families() -> None:
    """A query kept to the default families finds types on every priced cloud, and
    only of those families."""
    catalog = load_catalog()
    for cloud in ("aws", "gcp", "azure"):
        offers = catalog.offers(OfferQuery(cloud=cloud, cpus=(8.0, True),
                                           default_families_only=True,
                                           min_memory_per_vcpu=4.0))
        assert offers, cloud
        assert {o.default_family for o in offers} == {True}
        assert all(families.is_default(cloud, o.instance_type or "") for o in offers)
        assert all(o.memory_gib is not None and o.vcpus is not None
                   and o.memory_gib >= 4 * o.vcpus for o in offers)
