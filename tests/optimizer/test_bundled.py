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


# SkyPilot's default GCP host for accelerators attached to N1 VMs when the task
# gives no cpus or memory: (vCPUs, GiB), memory at least 4 GiB per vCPU.
_DEFAULT_HOSTS = {("T4", 1): (4, 16), ("T4", 4): (48, 192), ("V100", 8): (64, 256),
                  ("P100", 1): (8, 32), ("P4", 2): (16, 64)}


@pytest.mark.parametrize(("acc", "count", "nodes", "spot"), [
    ("T4", 1, 4, False), ("V100", 8, 2, True), ("T4", 4, 1, False), ("P100", 1, 1, False),
    ("P4", 2, 1, True),
])
def test_unsized_n1_hosts_are_at_least_the_default(acc: str, count: int, nodes: int,
                                                   spot: bool) -> None:
    want_cpus, want_mem = _DEFAULT_HOSTS[(acc, count)]
    for infra in ({"cloud": "gcp"}, None):
        cand = {"accelerator": {"name": acc, "count": count}, "use_spot": spot}
        if infra:
            cand["infra"] = infra
        tp = optimize([make_task({"candidates": [cand], "num_nodes": nodes})],
                      load_catalog()).tasks[0]
        gcp = [p for p in (tp.placement, *tp.alternatives) if p.cloud == "gcp"]
        assert gcp, infra
        for p in gcp:
            assert p.instance_type is not None and p.instance_type.startswith("n1-"), p
            assert p.vcpus is not None and p.vcpus >= want_cpus, p
            assert p.memory_gib is not None and p.memory_gib >= want_mem, p
            assert p.num_nodes == nodes and p.use_spot == spot


def test_default_gcp_hosts_are_the_cheapest_that_fit() -> None:
    p = _plan([{"accelerator": {"name": "V100", "count": 8}, "use_spot": True,
                "infra": {"cloud": "gcp"}}]).tasks[0].placement
    # once paired with an n1-standard-1 (1 vCPU, 3.75 GiB)
    assert (p.instance_type, p.vcpus, p.memory_gib) == ("n1-highmem-64", 64.0, 416.0)
    t4 = _plan([{"accelerator": {"name": "T4", "count": 1},
                 "infra": {"cloud": "gcp"}}]).tasks[0].placement
    assert (t4.instance_type, t4.vcpus, t4.memory_gib) == ("n1-highmem-4", 4.0, 26.0)


def test_explicit_cpus_or_instance_type_override_the_default_host() -> None:
    gcp = {"cloud": "gcp"}
    small = _plan([{"accelerator": {"name": "V100", "count": 8}, "use_spot": True,
                    "infra": gcp, "cpus": {"value": 8, "at_least": True}}]).tasks[0].placement
    assert small.vcpus is not None and 8 <= small.vcpus < 64
    pinned = _plan([{"accelerator": {"name": "T4", "count": 1}, "infra": gcp,
                     "instance_type": "n1-standard-1"}]).tasks[0].placement
    assert (pinned.instance_type, pinned.vcpus) == ("n1-standard-1", 1.0)
    # GCP's maxima still hold: one V100 carries at most 12 vCPUs
    with pytest.raises(InfeasibleError):
        _plan([{"accelerator": {"name": "V100", "count": 1}, "infra": gcp,
                "cpus": {"value": 16, "at_least": False}}])
