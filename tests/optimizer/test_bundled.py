"""The bundled snapshot gives the expected choices for well-known requests."""

from __future__ import annotations

import pytest

from skyc.catalog import load_catalog
from skyc.errors import InfeasibleError
from skyc.optimizer import Blocked, optimize
from tests.optimizer.helpers import make_task


def _plan(cands: list[dict], **kw: object):  # type: ignore[no-untyped-def]
    return optimize([make_task({"candidates": cands})], load_catalog(), **kw)  # type: ignore[arg-type]


def test_cheapest_a100x8() -> None:
    p = _plan([{"accelerator": {"name": "A100", "count": 8}}]).tasks[0].placement
    # a2-highgpu-8g host 6.51251 + 8 x A100 12.90919 in europe-west4-a
    assert (p.cloud, p.region, p.instance_type) == ("gcp", "europe-west4", "a2-highgpu-8g")
    assert p.hourly_cost == pytest.approx(19.4217)
    assert p.accelerator_memory_gib == 40.0


def test_h100x8_aws_pinned_region() -> None:
    plan = _plan([{"accelerator": {"name": "H100", "count": 8},
                   "infra": {"cloud": "aws", "region": "us-east-1"}}])
    p = plan.tasks[0].placement
    assert (p.cloud, p.region, p.instance_type) == ("aws", "us-east-1", "p5.48xlarge")
    assert p.zone is not None and p.zone.startswith("use1-")   # AWS zone IDs kept as-is
    assert plan.catalog is not None and plan.catalog.source == "bundled"
    assert plan.catalog.date == "2026-11-29"


def test_t4_spot() -> None:
    plan = _plan([{"accelerator": {"name": "t4", "count": 1}, "use_spot": True}])
    p = plan.tasks[0].placement
    # The cheapest T4 spot in the catalog is in an AWS Local Zone (usw2-lax1-az1,
    # $0.0631), which an account must opt in to: it is not picked unless pinned.
    assert (p.cloud, p.region, p.instance_type, p.use_spot) == (
        "azure", "australiacentral2", "Standard_NC4as_T4_v3", True)
    assert p.hourly_cost == pytest.approx(0.0684)
    alts = plan.tasks[0].alternatives
    assert len(alts) >= 5
    assert {a.cloud for a in alts} | {p.cloud} == {"aws", "azure", "gcp"}  # every cloud
    costs = [a.hourly_cost for a in alts]
    assert costs == sorted(costs) and p.hourly_cost <= costs[0]
    assert len({(a.cloud, a.region) for a in alts}) == len(alts)   # best per region


def test_an_opt_in_local_zone_is_used_only_when_pinned() -> None:
    where = {"cloud": "aws", "region": "us-west-2", "zone": "usw2-lax1-az1"}
    plan = _plan([{"accelerator": {"name": "t4", "count": 1}, "use_spot": True, "infra": where}])
    p = plan.tasks[0].placement
    assert (p.zone, p.instance_type, p.hourly_cost) == ("usw2-lax1-az1", "g4dn.xlarge", 0.0631)
    every = _plan([{"accelerator": {"name": "t4", "count": 1}, "infra": {"cloud": "aws"}}])
    zones = [a.zone for a in [every.tasks[0].placement, *every.tasks[0].alternatives]]
    assert not any(z and z.count("-") > 1 for z in zones)


def test_failover_moves_to_next_best() -> None:
    first = _plan([{"accelerator": {"name": "A100", "count": 8}}]).tasks[0].placement
    again = _plan([{"accelerator": {"name": "A100", "count": 8}}],
                  blocked=[Blocked(cloud=first.cloud, region=first.region)]).tasks[0].placement
    assert again.region != first.region and again.hourly_cost >= first.hourly_cost


def test_h100x16_says_use_two_nodes() -> None:
    with pytest.raises(InfeasibleError, match="largest has 8; use num_nodes: 2"):
        _plan([{"accelerator": {"name": "H100", "count": 16}}])
