"""The bundled object storage prices: every store skyc uses has one, each plausible
(USD per GB-month of a standard class), a region not listed gets its store's default,
and the file says where the figures come from and when they were taken."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skyc.catalog.storage_prices import price_text, storage_price, storage_price_table
from skyc.storage.stores import STORE_NAMES

DATA = Path(__file__).resolve().parents[2] / "skyc" / "catalog" / "data" / "storage_prices.json"


def test_every_store_has_prices_and_the_file_names_its_sources() -> None:
    assert set(storage_price_table()) == set(STORE_NAMES)
    header = json.loads(DATA.read_text(encoding="utf-8"))
    assert header["_taken"] == "2026-12"
    for where in ("aws.amazon.com/s3/pricing", "cloud.google.com/storage/pricing",
                  "azure.microsoft.com/pricing/details/storage/blobs",
                  "developers.cloudflare.com/r2/pricing"):
        assert where in header["_sources"]


@pytest.mark.parametrize("store", STORE_NAMES)
def test_each_price_is_plausible(store: str) -> None:
    prices = storage_price_table()[store]
    assert prices["title"]
    figures = [prices["default"], *prices["regions"].values()]
    assert all(isinstance(p, float) and 0.005 <= p <= 0.05 for p in figures), figures
    assert all(region == region.lower() for region in prices["regions"])
    if "default_of" in prices:  # the default is a listed region's own price
        assert prices["regions"][prices["default_of"]] == prices["default"]


@pytest.mark.parametrize(("store", "region", "usd", "basis"), [
    ("s3", "us-east-1", 0.023, "region"), ("s3", "eu-central-1", 0.0245, "region"),
    ("s3", "us-west-1", 0.026, "region"), ("s3", "xx-nowhere-1", 0.023, "default"),
    ("s3", None, 0.023, "default"),
    ("gcs", "us-central1", 0.020, "region"), ("gcs", "US-CENTRAL1", 0.020, "region"),
    ("gcs", "europe-west2", 0.023, "region"), ("gcs", None, 0.020, "default"),
    ("azure", "eastus", 0.018, "region"), ("azure", None, 0.018, "default"),
    ("r2", None, 0.015, "global"), ("r2", "auto", 0.015, "global"),
])
def test_a_region_gets_its_price_else_the_stores_default(
        store: str, region: str | None, usd: float, basis: str) -> None:
    price = storage_price(store, region)
    assert price is not None
    assert (price.usd_per_gb_month, price.basis) == (usd, basis)
    assert price.region == (region.lower() if basis == "region" and region else None)


def test_a_store_without_prices_has_none_and_the_monthly_figure() -> None:
    assert storage_price("tape", "us-east-1") is None
    price = storage_price("s3", "us-east-1")
    assert price is not None and price.monthly(2000) == 46.0 and price.monthly(-1) == 0.0
    assert [price_text(p) for p in (0.023, 0.0245, 0.02, 0.0405)] == [
        "$0.023", "$0.0245", "$0.020", "$0.0405"]
