"""Two regions with the same CPU machine; ``us-south-1`` is the cheaper (and the one
out of capacity, see ``lowering``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from skyc.catalog.offer import Offer
from skyc.settings.config import SkycConfig

EMPTY_HINT = "the extra target always offers its two regions"
FULL_REGION = "us-south-1"
OTHER_REGION = "us-east-1"


def offers_for(config: SkycConfig) -> list[Offer]:
    return [
        Offer(cloud="lambda", region=region, zone=None, instance_type="cpu_4x",
              accelerator=None, accelerator_count=0, accelerator_memory_gib=None,
              vcpus=4.0, memory_gib=16.0, price=price, spot_price=None)
        for region, price in ((FULL_REGION, 0.10), (OTHER_REGION, 0.12))
    ]


def describe(config: SkycConfig, env: Mapping[str, str], home: Path) -> list[str]:
    return [f"{FULL_REGION}, {OTHER_REGION}: cpu_4x"]
