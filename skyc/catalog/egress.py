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

The contract the optimizer relies on: both depend only on the source cloud,
the destination cloud and whether the region differs.
"""

from __future__ import annotations

INTER_REGION_PER_GB = 0.02
BANDWIDTH_GBPS = 10.0


def _tiered(gb: float, free: float, tiers: tuple[tuple[float, float], ...]) -> float:
    """Tiers are (upper bound GB, $/GB) applied cumulatively."""
    cost, low = 0.0, free
    for upper, rate in tiers:
        if gb <= low:
            break
        cost += (min(gb, upper) - low) * rate
        low = upper
    return cost


def internet_egress_cost(cloud: str, gb: float) -> float:
    if gb <= 0:
        return 0.0
    if cloud == "aws":
        if gb > 150 * 1024:
            return 0.05 * gb
        return _tiered(gb, 1, ((10 * 1024, 0.09), (50 * 1024, 0.085), (150 * 1024, 0.07)))
    if cloud == "azure":
        if gb > 150 * 1024:
            return 0.05 * gb
        return _tiered(gb, 5, ((10 * 1024, 0.0875), (50 * 1024, 0.083), (150 * 1024, 0.07)))
    if cloud == "gcp":
        return gb * (0.12 if gb <= 1024 else 0.11 if gb <= 10 * 1024 else 0.08)
    return 0.0


def egress_cost(src_cloud: str, src_region: str | None, dst_cloud: str,
                dst_region: str | None, gb: float) -> float:
    if gb <= 0 or (src_cloud, src_region) == (dst_cloud, dst_region):
        return 0.0
    if src_cloud == dst_cloud:
        return INTER_REGION_PER_GB * gb if src_cloud in ("aws", "gcp", "azure") else 0.0
    return internet_egress_cost(src_cloud, gb)


def egress_seconds(src_cloud: str, src_region: str | None, dst_cloud: str,
                   dst_region: str | None, gb: float) -> float:
    if gb <= 0 or (src_cloud, src_region) == (dst_cloud, dst_region):
        return 0.0
    return gb * 8 / BANDWIDTH_GBPS
