"""AWS stacks end to end: the real terraform binary and AWS provider against a real
moto server on 127.0.0.1 (the provider's endpoints point at it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from skyc.apply.provision import plan_changes, provision, teardown
from skyc.errors import ProvisionError
from skyc.model.plan import Placement
from skyc.settings.config import SkycConfig
from skyc.task.candidate import ResourceCandidate
from tests.support.moto_server import CREDENTIALS, MotoServer, moto_server
from tests.support.terraform import requires_aws_provider, requires_terraform, skyc_home

__all__ = ["moto_server", "skyc_home"]

pytestmark = [pytest.mark.slow, pytest.mark.aws, requires_terraform, requires_aws_provider]


@pytest.fixture
def aws_env(
    moto_server: MotoServer, skyc_home: Path, monkeypatch: pytest.MonkeyPatch
) -> SkycConfig:
    for key, value in CREDENTIALS.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    moto_server.reset()
    return SkycConfig.model_validate({"aws": {"endpoint_url": moto_server.url}})


def _gpu(n: int, zone: str = "use1-az1") -> Placement:
    return Placement(cloud="aws", region="us-east-1", zone=zone, instance_type="g5.xlarge",
                     accelerators={"A10G": 1}, num_nodes=n, hourly_cost=1.006 * n)


# gp3's baseline tier: moto does not report custom iops/throughput back.
CANDIDATE = ResourceCandidate(index=0, disk_tier="low", ports=("8080",),
                              labels={"team": "ml"})


def _live_instances(server: MotoServer, cluster: str) -> list[dict[str, Any]]:
    ec2 = server.client("ec2")
    reservations = ec2.describe_instances(
        Filters=[{"Name": "tag:skyc-cluster", "Values": [cluster]}]
    )["Reservations"]
    return [i for r in reservations for i in r["Instances"]
            if i["State"]["Name"] not in ("terminated", "shutting-down")]


def test_gpu_cluster_apply_replan_grow_destroy(
    aws_env: SkycConfig, moto_server: MotoServer
) -> None:
    info = provision("gpu", _gpu(2), CANDIDATE, config=aws_env)
    assert [n.name for n in info.nodes] == ["head", "worker1"]
    assert all(n.transport == "ssh" and n.user == "ubuntu" and n.host for n in info.nodes)
    assert info.num_gpus_per_node == 1
    live = _live_instances(moto_server, "gpu")
    assert len(live) == 2
    assert {i["InstanceType"] for i in live} == {"g5.xlarge"}
    assert {i["PrivateIpAddress"] for i in live} == {n.ip for n in info.nodes}
    tags = {t["Key"]: t["Value"] for t in live[0]["Tags"]}
    assert tags["skyc-cluster"] == "gpu" and tags["team"] == "ml"
    # The nodes are in the region's shared network, whose subnet is in their zone.
    subnets = moto_server.client("ec2").describe_subnets(
        Filters=[{"Name": "tag:skyc-network", "Values": ["aws-us-east-1"]}])["Subnets"]
    assert [s["AvailabilityZoneId"] for s in subnets] == ["use1-az1"]
    assert {i["SubnetId"] for i in live} == {subnets[0]["SubnetId"]}

    again = plan_changes("gpu", _gpu(2), CANDIDATE, config=aws_env)
    assert not again.has_changes, [c for c in again.changes if c.action != "no-op"]
    assert again.exit_code == 0

    grown = plan_changes("gpu", _gpu(3), CANDIDATE, config=aws_env)
    # One node more: its instance and its power state (on-demand nodes have one).
    assert [(c.address, c.action) for c in grown.changes if c.action != "no-op"] == [
        ("aws_ec2_instance_state.node_2", "create"), ("aws_instance.node_2", "create")
    ]

    teardown("gpu")
    assert _live_instances(moto_server, "gpu") == []
    vpcs = moto_server.client("ec2").describe_vpcs(
        Filters=[{"Name": "tag:skyc-network", "Values": ["aws-us-east-1"]}])["Vpcs"]
    assert vpcs == []  # the network went with its last cluster


def test_invalid_zone_is_a_non_retryable_provision_error(aws_env: SkycConfig,
                                                         skyc_home: Path) -> None:
    # A real error from moto through terraform: the subnet's zone ID does not exist.
    with pytest.raises(ProvisionError) as caught:
        provision("badzone", _gpu(1, zone="use1-az99"), CANDIDATE, config=aws_env)
    error = caught.value
    assert error.code == "InvalidParameterValue"
    assert error.retryable is False and error.scope == "cloud"
    # The zone's subnet is the shared network's, made first: its failure is the
    # cluster's, and the network it started is removed (no cluster uses it).
    assert error.failure.resource == "aws_subnet.subnet_use1_az99"
    assert error.failure.zone == "use1-az99"
    assert not (skyc_home / "networks" / "network-aws-us-east-1").exists()
