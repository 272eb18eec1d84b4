"""What a GB kept in a bucket costs a month (USD), per store and region: the list
price of each store's standard class at its first price tier, free tiers left out.

The figures are the stores' public list prices as taken in 2026-12: S3 Standard
(aws.amazon.com/s3/pricing, first 50 TB / month: $0.023 in us-east-1), GCS Standard
storage (cloud.google.com/storage/pricing, regional locations: $0.020 in us-central1;
the us, eu and asia multi-regions $0.026), Azure block blobs, general purpose v2, Hot
tier, LRS (azure.microsoft.com/pricing/details/storage/blobs, first 50 TB / month:
$0.018 in eastus) and Cloudflare R2 Standard storage (developers.cloudflare.com/r2/
pricing: $0.015, one global price). Requests, retrievals and data transfer are not
counted here (data transfer is :mod:`skyc.catalog.egress`).

They are catalog data (``data/storage_prices.json``: per store a title, a default and
the regions listed); a region not listed, or not known (a bucket read as it is), gets
its store's default, which says so; a store with no regions listed has one price
everywhere. Every store skyc uses has an entry (a test checks).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

Basis = Literal["region", "default", "global"]


@dataclass(frozen=True)
class StoragePrice:
    """A store's price per GB-month in a region: the region's own (``region``), the
    store's default for a region not listed or not known (``default``), or the one price
    a store has everywhere (``global``)."""

    store: str
    title: str  # the class priced: "S3 Standard"
    usd_per_gb_month: float
    region: str | None  # the region priced; None for a default or global price
    basis: Basis

    def monthly(self, gb: float) -> float:
        """USD a month for ``gb`` GB kept, 2 decimals."""
        return round(self.usd_per_gb_month * max(gb, 0.0), 2)


@cache
def storage_price_table() -> dict[str, dict[str, Any]]:
    """store -> its prices, from the bundled ``storage_prices.json``."""
    path = Path(__file__).parent / "data" / "storage_prices.json"
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return {store: prices for store, prices in data.items() if not store.startswith("_")}


def storage_price(store: str, region: str | None) -> StoragePrice | None:
    """The price per GB-month of ``store``'s standard class in ``region`` (None: not
    known); None for a store the table has no price for."""
    prices = storage_price_table().get(store)
    if prices is None:
        return None
    title, regions = str(prices["title"]), dict(prices.get("regions") or {})
    if not regions:
        return StoragePrice(store, title, float(prices["default"]), None, "global")
    key = region.lower() if region else None
    if key is not None and key in regions:
        return StoragePrice(store, title, float(regions[key]), key, "region")
    return StoragePrice(store, title, float(prices["default"]), None, "default")


def price_text(usd_per_gb_month: float) -> str:
    """``$0.023``, ``$0.0245``: at least three decimals, no trailing zeros past them."""
    digits = f"{usd_per_gb_month:.4f}"
    while digits.endswith("0") and len(digits.split(".")[1]) > 3:
        digits = digits[:-1]
    return f"${digits}"
