"""Clusters share their region's network, against a region's VPC quota, end to end:
`skyc apply` (a subprocess) with the real terraform + AWS provider against a real moto
server behind the fault proxy, which enforces EC2's ``VpcLimitExceeded`` as a quota
(a CreateVpc is refused while the region holds the limit's number of VPCs besides
its default one; deleting one frees room).

Two users (two homes, two user names) share the account, as a team does: each one's
clusters share one network per region, their names never collide, and the network goes
with the last cluster that used it (unless the config keeps it, as Bob's does).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.failover.aws_env import (
    AwsHome,
    cloud_resources,
    leaks,
    live_instances,
    make_home,
    owned_ids,
)
from tests.support.fault_proxy import FaultProxy, FaultRule
from tests.support.moto_server import MotoServer, start_moto
from tests.support.terraform import requires_aws_provider, requires_terraform

pytestmark = [pytest.mark.slow, pytest.mark.aws, requires_terraform, requires_aws_provider,
              pytest.mark.timeout(900)]

REGION = "us-east-1"


@pytest.fixture(scope="module")
def moto(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoServer]:
    with start_moto(tmp_path_factory.mktemp("moto") / "moto.log") as server:
        yield server


@pytest.fixture
def proxy(moto: MotoServer) -> Iterator[FaultProxy]:
    with FaultProxy(upstream=moto.url) as front:
        yield front


def _vpcs(moto: MotoServer) -> list[dict[str, object]]:
    ec2 = moto.client("ec2", REGION)
    return [v for v in ec2.describe_vpcs()["Vpcs"] if not v.get("IsDefault")]


def _network(home: AwsHome) -> dict[str, object]:
    """The home's one network, as `skyc status --format json` shows it (and `skyc state
    check` reads every record of it without a problem)."""
    out = home.skyc("state", "check", "--format", "json")
    assert out.returncode == 0, out.stdout + out.stderr
    assert json.loads(out.stdout)["tables"]["networks"] == 1
    status = home.skyc("status", "--format", "json")
    assert status.returncode == 0, status.stderr
    [network] = json.loads(status.stdout)["networks"]
    return dict(network)


def test_more_clusters_than_the_vpc_quota_share_one_network_and_it_goes_with_the_last(
        tmp_path: Path, moto: MotoServer, proxy: FaultProxy) -> None:
    proxy.set_rules([FaultRule(action="CreateVpc", code="VpcLimitExceeded", region=REGION,
                               limit=2, message="The maximum number of VPCs has been "
                               "reached.")])
    alice = make_home(tmp_path / "alice", moto, proxy, user="alice@laptop")
    bob = make_home(tmp_path / "bob", moto, proxy, user="bob@ci")
    with (bob.home / "config.yaml").open("a") as config:  # Bob keeps his network
        config.write("provision:\n  keep_network: true\n")

    # A plan says the region's network is made first (none exists yet).
    plan = alice.skyc("plan", str(alice.task("one", f"aws/{REGION}")), "--format", "json")
    assert plan.returncode == 0, plan.stdout + plan.stderr
    [stack] = json.loads(plan.stdout)["stacks"]
    assert f"network-aws-{REGION} (its VPC with a subnet in use1-az1) is created first" in (
        stack["note"] or ""), stack
    # Alice applies two clusters in one region at once: the network's lock lets one
    # apply make it, and the other uses it (one VPC; the quota allows two).
    applies = [alice.popen("apply", str(alice.task(name, f"aws/{REGION}")), "--yes")
               for name in ("one", "two")]
    outs = [" ".join(proc.communicate(timeout=600)[0].split()) for proc in applies]
    assert [proc.returncode for proc in applies] == [0, 0], outs
    assert sum(f"creating network-aws-{REGION}" in out for out in outs) == 1, outs
    for name in ("one", "two"):
        assert [r["region"] for r in alice.status(name)] == [REGION]
    assert len(_vpcs(moto)) == 1
    network = _network(alice)
    assert (network["name"], network["status"], network["clusters"], network["zones"]) == (
        f"network-aws-{REGION}", "READY", ["one", "two"], ["use1-az1"])
    assert f"network network-aws-{REGION} (aws/{REGION}, READY): used by one, two" in (
        alice.skyc("status", "-v").stdout)
    vpc = _vpcs(moto)[0]["VpcId"]
    instances = live_instances(moto, REGION)
    assert {i["VpcId"] for i in instances} == {vpc} and len(instances) == 2
    # Each cluster keeps its own security group in the shared VPC; its nodes accept
    # traffic from that group, not from the whole VPC.
    groups = {g["GroupId"]: g for g in moto.client("ec2", REGION).describe_security_groups(
        Filters=[{"Name": "vpc-id", "Values": [vpc]}])["SecurityGroups"]
        if g["GroupName"] != "default"}
    assert len(groups) == 2
    for group in groups.values():
        internal = [p for p in group["IpPermissions"] if p["IpProtocol"] == "-1"]
        assert internal and all(
            [u["GroupId"] for u in p["UserIdGroupPairs"]] == [group["GroupId"]]
            and not p["IpRanges"] for p in internal), group

    # Bob, in the same account, names a cluster as Alice did: no name collides, and
    # his clusters get a network of their own (his state is his own): the 2nd VPC.
    out = bob.skyc("apply", str(bob.task("one", f"aws/{REGION}")), "--yes")
    assert out.returncode == 0, out.stdout + out.stderr
    assert len(_vpcs(moto)) == 2 and len(live_instances(moto, REGION)) == 3
    assert not proxy.hits  # no CreateVpc ever met the quota

    # The network stays while a cluster uses it, and goes with the last one.
    out = alice.skyc("down", "one", "--yes")
    assert out.returncode == 0, out.stdout + out.stderr
    assert vpc in {v["VpcId"] for v in _vpcs(moto)}
    assert _network(alice)["clusters"] == ["two"]
    out = alice.skyc("down", "two", "--yes")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "no cluster uses it any more" in " ".join(out.stdout.split())
    assert vpc not in {v["VpcId"] for v in _vpcs(moto)}
    assert not (alice.home / "networks").exists() or not any((alice.home / "networks").iterdir())

    # Bob's clusters never noticed; what is left in the account is exactly his.
    assert leaks(moto, owned_ids(bob.home, "one")) == {}
    out = bob.skyc("down", "one", "--yes")
    assert out.returncode == 0, out.stdout + out.stderr
    # Bob's config keeps his network when its last cluster goes: only it is left.
    left = {kind: ids for kind, ids in cloud_resources(moto).items()
            if kind.startswith(f"{REGION} ") and ids and not kind.endswith("volumes")}
    assert set(left) == {f"{REGION} vpcs", f"{REGION} subnets",
                         f"{REGION} internet gateways"}, left
    assert leaks(moto, owned_ids(bob.home)) == {}
