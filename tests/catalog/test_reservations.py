"""Which offers a cloud grants only from a reservation, and whether the config names one."""

from __future__ import annotations

from skyc.catalog import Offer, load_catalog
from skyc.catalog.reservations import configured_reservations, needs_reservation
from skyc.settings.config import SkycConfig


def _offer(cloud: str, instance_type: str) -> Offer:
    return Offer(cloud=cloud, region="r", zone=None, instance_type=instance_type,
                 accelerator=None, accelerator_count=0, accelerator_memory_gib=None,
                 vcpus=None, memory_gib=None, price=1.0, spot_price=0.5)


def test_only_on_demand_a3_ultra_and_a4_on_gcp_need_one() -> None:
    assert needs_reservation("gcp", "a4-highgpu-8g", False)
    assert needs_reservation("gcp", "a3-ultragpu-8g", False)
    assert not needs_reservation("gcp", "a4-highgpu-8g", True)
    assert not needs_reservation("gcp", "a3-highgpu-8g", False)
    assert not needs_reservation("aws", "a4-highgpu-8g", False)


def test_a_catalog_refuses_them_unless_its_cloud_names_a_reservation() -> None:
    cat = load_catalog(clouds=["gcp"], reservations={})
    a4 = _offer("gcp", "a4-highgpu-8g")
    assert "only from a reservation" in (cat.reservation_missing(a4, False) or "")
    assert cat.reservation_missing(a4, True) is None
    assert cat.reservation_missing(_offer("gcp", "n2-standard-8"), False) is None
    cat.reservations = {"aws": ["elsewhere"]}
    assert cat.reservation_missing(a4, False) is not None
    cat.reservations = {"gcp": ["mine"]}
    assert cat.reservation_missing(a4, False) is None


def test_configured_reservations_per_cloud() -> None:
    config = SkycConfig.model_validate({"gcp": {"reservations": ["a", "b"]}})
    assert configured_reservations(config) == {"gcp": ["a", "b"]}
    assert configured_reservations(SkycConfig.model_construct()) == {"gcp": []}
