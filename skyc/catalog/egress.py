"""Data transfer between placements: cost (USD) and time (seconds).

Internet egress per GB is SkyPilot's public figures (``get_egress_cost`` of
``sky/clouds/aws.py``, ``gcp.py`` and ``azure.py``), which follow the clouds'
list prices: AWS $0.09/GB after the first GB, $0.085 above 10 TB, $0.07 above
50 TB, $0.05 flat above 150 TB (aws.amazon.com/ec2/pricing/on-demand, "Data
Transfer"); GCP $0.12/GB up to 1 TB, $0.11 up to 10 TB, $0.08 above
(cloud.google.com/vpc/network-pricing); Azure $0.0875/GB after 5 GB, $0.083
above 10 TB, $0.07 above 50 TB, $0.05 above 150 TB
(azure.microsoft.com/pricing/details/bandwidth). Between two regions of the
same cloud we charge $0.02/GB (the AWS and Azure inter-region list price; GCP's
inter-continent rate is higher, intra-continent lower). Machines that are not
bought (local, SSH pools, Kubernetes) send for free.

Time: like SkyPilot's optimizer, a 10 Gbit/s link between distinct locations.

The figures are catalog data (``data/egress.json``, one entry per priced cloud); a
cloud with a price catalog and no entry there is a packaging error (a test checks
every bundled catalog has one), and infra that is not bought has none.

The contract the optimizer relies on: both depend only on the source cloud,
the destination cloud and whether the region differs.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

BANDWIDTH_GBPS = 10.0


@cache
def egress_rates() -> dict[str, dict[str, Any]]:
    """cloud -> its data transfer prices, from the bundled ``egress.json``."""
    path = Path(__file__).parent / "data" / "egress.json"
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return {cloud: rates for cloud, rates in data.items() if not cloud.startswith("_")}


def _tiered(gb: float, free: float, tiers: list[list[float]]) -> float:
    """Tiers are (upper bound GB, $/GB) applied cumulatively."""
    cost, low = 0.0, free
    for upper, rate in tiers:
        if gb <= low:
            break
        cost += (min(gb, upper) - low) * rate
        low = upper
    return cost


def _by_volume(gb: float, brackets: list[list[float | None]]) -> float:
    """The whole volume at the rate of the first bracket (upper bound GB) it fits."""
    for upper, rate in brackets:
        if upper is None or gb <= upper:
            return gb * float(rate or 0.0)
    return 0.0


def internet_egress_cost(cloud: str, gb: float) -> float:
    rates = egress_rates().get(cloud)
    if gb <= 0 or rates is None:
        return 0.0
    flat = rates.get("flat_above")
    if flat is not None and gb > flat[0]:
        return float(flat[1]) * gb
    if "volume_rates" in rates:
        return _by_volume(gb, rates["volume_rates"])
    return _tiered(gb, float(rates.get("free_gb", 0)), rates.get("tiers", []))


def egress_cost(src_cloud: str, src_region: str | None, dst_cloud: str,
                dst_region: str | None, gb: float) -> float:
    if gb <= 0 or (src_cloud, src_region) == (dst_cloud, dst_region):
        return 0.0
    if src_cloud == dst_cloud:
        rates = egress_rates().get(src_cloud)
        return float(rates.get("inter_region", 0.0)) * gb if rates else 0.0
    return internet_egress_cost(src_cloud, gb)


def egress_seconds(src_cloud: str, src_region: str | None, dst_cloud: str,
                   dst_region: str | None, gb: float) -> float:
    if gb <= 0 or (src_cloud, src_region) == (dst_cloud, dst_region):
        return 0.0
    return gb * 8 / BANDWIDTH_GBPS
