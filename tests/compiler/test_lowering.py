"""Lowering rules checked on the built stacks (no engine needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from skyc.compiler import build_stack, capabilities, nodes_from_outputs
from skyc.errors import ConfigError, SkycError, UnsupportedFeature
from skyc.model.plan import Placement
from skyc.settings.config import SkycConfig
from skyc.stacks import Block, Ref, Stack, Var, to_terraform
from skyc.stacks.terraform_json import address
from skyc.task.candidate import ResourceCandidate

WS = Path("/nonexistent/skyc/clusters/c")
UNTAGGABLE = {"aws_route", "aws_route_table_association", "aws_ec2_instance_state"}


def _aws(**kw: Any) -> Placement:
    base: dict[str, Any] = dict(cloud="aws", region="us-east-1", zone="use1-az2",
                                instance_type="g5.xlarge", accelerators={"A10G": 1},
                                hourly_cost=1.0)
    return Placement(**{**base, **kw})


def _build(placement: Placement, config: SkycConfig | None = None, **cand: Any) -> Stack:
    return build_stack("c", placement, ResourceCandidate(index=0, **cand),
                       config=config or SkycConfig(), workspace=WS)


def _plain(value: Any) -> Any:
    """Blocks as their values, to read nested arguments."""
    if isinstance(value, Block):
        return _plain(value.values)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _res(stack: Stack, key: str) -> dict[str, Any]:
    return dict(_plain(stack.resource(key).properties))


def _addresses(stack: Stack) -> set[str]:
    return {address(r) for r in stack.resources}


def test_every_taggable_aws_resource_carries_cluster_and_labels() -> None:
    stack = _build(_aws(num_nodes=2), labels={"team": "ml"}, network_tier="best")
    for res in stack.resources:
        if res.types["terraform"] in UNTAGGABLE:
            continue
        tags = res.properties["tags"]
        assert tags["skyc-cluster"] == "c" and tags["team"] == "ml", res.key


def test_zone_id_ports_and_rules() -> None:
    stack = _build(_aws(), ports=("8080", "9000-9010", "22"))
    # The zone is the subnet's, in the region's shared network stack.
    from skyc.compiler.aws.network import network_stack

    network = network_stack("us-east-1", [_aws().zone], "a@b", SkycConfig())
    assert _res(network, "subnet_use1_az2")["availability_zone_id"] == "use1-az2"
    assert "subnet_id" in stack.variables
    ingress = {r.name: r.properties for r in stack.resources
               if r.types["terraform"] == "aws_vpc_security_group_ingress_rule"}
    assert set(ingress) == {"tcp_22", "tcp_8080", "tcp_9000_9010", "cluster"}
    assert (ingress["tcp_9000_9010"]["from_port"], ingress["tcp_9000_9010"]["to_port"]) == (
        9000, 9010)
    assert "aws_vpc_security_group_egress_rule.all" in _addresses(stack)


@pytest.mark.parametrize("bad", ["http", "70000", "10-5"])
def test_bad_port_names_the_field(bad: str) -> None:
    with pytest.raises(ConfigError, match="ports"):
        _build(_aws(), ports=(bad,))


def test_spot_uses_market_options_and_ignores_them_after_create() -> None:
    spot = _build(_aws(use_spot=True))
    inst = _res(spot, "node_0")
    assert inst["instance_market_options"]["market_type"] == "spot"
    assert "instance_market_options" in spot.resource("node_0").ignore_changes
    on_demand = _res(_build(_aws()), "node_0")
    assert "instance_market_options" not in on_demand


def test_disk_tiers() -> None:
    low = _res(_build(_aws(), disk_tier="low", disk_size=50), "node_0")
    assert "iops" not in low["root_block_device"]
    ultra = _res(_build(_aws(), disk_tier="ultra", disk_size=20,
                        image_id="ami-0123456789abcdef0"), "node_0")
    assert ultra["root_block_device"]["iops"] == 10000          # 500 IOPS per GiB
    assert ultra["root_block_device"]["throughput"] == 1000
    with pytest.raises(ConfigError, match="disk_tier"):
        _build(_aws(), disk_tier="fast")


# SkyPilot's gp3 volumes on AWS (sky/clouds/aws.py): IOPS, and IOPS // 16 MiB/s.
SKYPILOT_GP3 = {"medium": (3500, 218), "high": (7000, 437)}
GP3_BASELINE = (3000, 125)
GP3_IOPS_MONTH, GP3_MIBS_MONTH = 0.005, 0.040  # USD above the baseline, us-east-1


def _gp3_extra(iops: int, throughput: int) -> float:
    return ((iops - GP3_BASELINE[0]) * GP3_IOPS_MONTH
            + (throughput - GP3_BASELINE[1]) * GP3_MIBS_MONTH)


@pytest.mark.parametrize("tier", [None, "low", "medium", "high", "ultra", "best"])
def test_no_disk_tier_costs_more_than_skypilots(tier: str | None) -> None:
    """The default tier (medium) and high provision what SkyPilot does, no more; ultra
    and best stay on gp3 (SkyPilot's io2 at 20000 IOPS costs far more); low is gp3's
    baseline, which costs nothing above the storage."""
    volume = _res(_build(_aws(), disk_tier=tier), "node_0")["root_block_device"]
    assert volume["volume_type"] == "gp3"
    iops, throughput = volume.get("iops", GP3_BASELINE[0]), volume.get("throughput",
                                                                       GP3_BASELINE[1])
    skypilot = SKYPILOT_GP3.get(tier or "medium")
    if skypilot is not None:
        assert (iops, throughput) == skypilot
        assert _gp3_extra(iops, throughput) <= _gp3_extra(*skypilot)
    io2_20000_iops_month = 20000 * 0.065  # io2's provisioned IOPS alone, per month
    assert _gp3_extra(iops, throughput) < io2_20000_iops_month


def test_efa_and_placement_group_for_best_network() -> None:
    """In the region's shared network: each node's EFA is its one interface, made at
    launch from the cluster's launch template with a public address (no Elastic IPs,
    5 per region)."""
    stack = _build(_aws(instance_type="p5.48xlarge", accelerators={"H100": 8}, num_nodes=4),
                   network_tier="best")
    addresses = _addresses(stack)
    assert {"aws_placement_group.main", "aws_launch_template.main",
            "aws_vpc_security_group_ingress_rule.efa",
            "aws_vpc_security_group_egress_rule.efa"} <= addresses
    assert not [a for a in addresses if a.startswith(("aws_eip.", "aws_network_interface."))]
    [nic] = _plain(_res(stack, "launch_template")["network_interfaces"])
    assert (nic["interface_type"], nic["device_index"], nic["associate_public_ip_address"],
            nic["subnet_id"]) == ("efa", 0, "true", Var(name="subnet_id"))
    inst = _res(stack, "node_3")
    assert "subnet_id" not in inst and "network_interface" not in inst
    assert stack.outputs["public_ips"].value[3] == Ref(resource="node_3", attribute="public_ip")
    plain = _build(_aws(num_nodes=4))
    assert not {"aws_launch_template.main", "aws_placement_group.main"} & _addresses(plain)


def test_efa_of_a_cluster_with_its_own_network_keeps_its_interfaces_and_addresses(
        tmp_path: Path) -> None:
    workspace = tmp_path / "c"
    workspace.mkdir()
    (workspace / "network").write_text("own\n")
    stack = build_stack("c", _aws(instance_type="p5.48xlarge", accelerators={"H100": 8},
                                  num_nodes=4),
                        ResourceCandidate(index=0, network_tier="best"), config=SkycConfig(),
                        workspace=workspace)
    addresses = _addresses(stack)
    assert {*(f"aws_network_interface.efa_{i}" for i in range(4)),
            *(f"aws_eip.node_{i}" for i in range(4))} <= addresses
    inst = _res(stack, "node_3")
    assert "subnet_id" not in inst and inst["network_interface"][0]["device_index"] == 0
    assert inst["network_interface"][0]["network_interface_id"] == Ref(
        resource="efa_3", attribute="id")


@pytest.mark.parametrize(("instance_type", "accelerators", "arch", "tag_image"), [
    ("g5.xlarge", {"A10G": 1}, None, "ami-0c3bc6c2c633f3dd3"),       # custom-gpu-ubuntu
    ("m6i.large", None, None, "ami-0e6842148a3d9982b"),              # custom-cpu-ubuntu
    ("m7g.large", None, None, "ami-010ff894c9df6c3f9"),              # custom-cpu-ubuntu-arm64
    ("g5g.xlarge", {"T4G": 1}, "arm64", "ami-0b43efcb5366f38d0"),     # custom-gpu-ubuntu-arm64
    ("trn1.2xlarge", {"Trainium": 1}, None, "ami-0063318bf775e8d12"),  # neuron-ubuntu-2204
])
def test_ami_from_the_image_table(
    instance_type: str, accelerators: dict[str, float] | None, arch: str | None, tag_image: str
) -> None:
    placement = _aws(instance_type=instance_type, accelerators=accelerators, arch=arch)
    assert _res(_build(placement), "node_0")["ami"] == tag_image


def test_user_images() -> None:
    per_region = {"us-east-1": "ami-0123456789abcdef0"}
    assert _res(_build(_aws(), image_id=per_region), "node_0")["ami"] == (
        "ami-0123456789abcdef0")
    with pytest.raises(ConfigError, match="us-west-2"):
        _build(_aws(region="us-west-2", zone=None), image_id=per_region)
    with pytest.raises(UnsupportedFeature, match="docker"):
        _build(_aws(), image_id="docker:pytorch/pytorch")


def test_endpoint_override_sets_every_service_and_skips() -> None:
    config = SkycConfig.model_validate(
        {"aws": {"endpoint_url": "http://127.0.0.1:5000", "profile": "p"}})
    provider = _plain(_build(_aws(), config).providers["aws"].settings)
    assert set(provider["endpoints"][0].values()) == {"http://127.0.0.1:5000"}
    assert {"ec2", "sts"} <= set(provider["endpoints"][0])
    assert provider["skip_credentials_validation"] and provider["skip_requesting_account_id"]
    assert provider["profile"] == "p" and provider["max_retries"] == 2


def test_backend_goes_into_the_terraform_block_one_state_per_stack() -> None:
    backend = {"s3": {"bucket": "b", "key": "k", "region": "us-east-1"}}
    config = SkycConfig.model_validate({"backend": backend})
    for placement in (_aws(), Placement(cloud="local", hourly_cost=0)):
        stack = _build(placement, config)
        assert to_terraform(stack)["terraform"]["backend"] == {"s3": {
            "bucket": "b", "key": f"k/{stack.name}.tfstate", "region": "us-east-1"}}
    gcs = SkycConfig.model_validate({"backend": {"gcs": {"bucket": "b"}},
                                     "engine": "terraform"})
    stack = _build(_aws(), gcs)
    assert to_terraform(stack)["terraform"]["backend"] == {"gcs": {
        "bucket": "b", "prefix": f"skyc/{stack.name}"}}


@pytest.mark.parametrize("cloud", ["local", "ssh"])
def test_targets_refuse_what_they_cannot_do(cloud: str) -> None:
    config = SkycConfig.model_validate({"ssh_pools": {"lab": {"hosts": ["h1"]}}})
    placement = Placement(cloud=cloud, region="lab" if cloud == "ssh" else None,
                          use_spot=True, hourly_cost=0)
    assert capabilities(cloud).spot is False
    with pytest.raises(UnsupportedFeature, match="use_spot"):
        _build(placement, config)
    with pytest.raises(UnsupportedFeature, match="image_id"):
        _build(placement.model_copy(update={"use_spot": False}), config, image_id="ami-1")


def test_unknown_cloud_and_bad_names_are_clear_errors() -> None:
    with pytest.raises(UnsupportedFeature, match="cannot provision on 'lambda'"):
        _build(Placement(cloud="lambda", region="us-east-1", hourly_cost=1))
    with pytest.raises(ConfigError, match="cluster name"):
        build_stack("../x", _aws(), ResourceCandidate(index=0), config=SkycConfig(),
                    workspace=WS)


def test_ssh_pool_hosts_and_nodes() -> None:
    config = SkycConfig.model_validate({"ssh_pools": {"lab": {
        "hosts": ["10.0.0.5", "admin@10.0.0.6:2222"], "user": "ubuntu",
        "identity_file": "/keys/id"}}})
    placement = Placement(cloud="ssh", region="lab", num_nodes=2, hourly_cost=0)
    stack = _build(placement, config)
    outputs = {"hosts": [r.properties["input"] for r in stack.resources]}
    nodes = nodes_from_outputs("ssh", "c", outputs, config=config, workspace=WS)
    assert [(n.host, n.port, n.user, n.identity_file) for n in nodes] == [
        ("10.0.0.5", 22, "ubuntu", "/keys/id"), ("10.0.0.6", 2222, "admin", "/keys/id")]
    with pytest.raises(ConfigError, match="2 host"):
        _build(placement.model_copy(update={"num_nodes": 3}), config)
    with pytest.raises(ConfigError, match="ssh pool 'nope'"):
        _build(placement.model_copy(update={"region": "nope"}), config)


def test_aws_nodes_from_outputs() -> None:
    outputs = {"private_ips": ["10.0.0.4", "10.0.0.5"], "public_ips": ["1.2.3.4", "1.2.3.5"],
               "ssh_user": "ubuntu", "instance_ids": ["i-1", "i-2"]}
    nodes = nodes_from_outputs("aws", "c", outputs, config=SkycConfig(), workspace=WS)
    assert [(n.name, n.rank, n.ip, n.host) for n in nodes] == [
        ("head", 0, "10.0.0.4", "1.2.3.4"), ("worker1", 1, "10.0.0.5", "1.2.3.5")]
    assert nodes[0].identity_file == str(WS / "keys" / "id_ed25519")
    with pytest.raises(SkycError):
        nodes_from_outputs("aws", "c", {}, config=SkycConfig(), workspace=WS)
