"""AWS and GCP clusters share their region's network (skyc.compiler.aws.network,
skyc.compiler.gcp.network): the network stack, and a cluster's stack with the network's
ids as inputs; a cluster whose stack was written before networks were shared keeps its
own VPC."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skyc.compiler import build_stack, network_part, workspace_values
from skyc.compiler.aws.network import network_stack, subnet_cidr
from skyc.compiler.shared_network import PENDING
from skyc.model.plan import Placement
from skyc.model.workspace import ENGINE_FILE, NETWORK_FILE, NETWORK_MODE_FILE
from skyc.settings.config import SkycConfig
from skyc.stacks import emit
from skyc.task.candidate import ResourceCandidate

CONFIG = SkycConfig(user="alice@laptop")


def _placement(zone: str | None = "use1-az1") -> Placement:
    return Placement(cloud="aws", region="us-east-1", zone=zone,
                     instance_type="inf1.xlarge", num_nodes=2, hourly_cost=0.4)


def _types(stack: object) -> set[str]:
    return {r.types["terraform"] for r in stack.resources}  # type: ignore[attr-defined]


def test_a_new_cluster_takes_the_network_as_inputs_and_keeps_its_own_firewall(
        tmp_path: Path) -> None:
    stack = build_stack("web", _placement(), ResourceCandidate(index=0), config=CONFIG,
                        workspace=tmp_path / "web")
    assert not _types(stack) & {"aws_vpc", "aws_subnet", "aws_internet_gateway",
                                "aws_route_table", "aws_route"}
    assert {"vpc_id", "subnet_id"} <= set(stack.variables)
    doc = json.loads(emit(stack, "terraform")["main.tf.json"])
    group = doc["resource"]["aws_security_group"]["main"]
    assert group["vpc_id"] == "${var.vpc_id}"
    for node in doc["resource"]["aws_instance"].values():
        assert node["subnet_id"] == "${var.subnet_id}" and "depends_on" not in node
    # Other clusters' nodes share the VPC: only the cluster's own group is let in.
    internal = doc["resource"]["aws_vpc_security_group_ingress_rule"]["cluster"]
    assert internal["referenced_security_group_id"] == "${aws_security_group.main.id}"
    assert "cidr_ipv4" not in internal

    # Before its network exists (a plan), the inputs say so; then the network's ids.
    workspace = tmp_path / "web"
    values = workspace_values(stack, workspace)
    assert {k: values[k] for k in PENDING} == PENDING
    assert (workspace / NETWORK_MODE_FILE).read_text() == "shared\n"
    (workspace / NETWORK_FILE).write_text(json.dumps({"vpc_id": "vpc-1", "subnet_id": "s-1"}))
    values = workspace_values(stack, workspace)
    assert (values["vpc_id"], values["subnet_id"]) == ("vpc-1", "s-1")


@pytest.mark.parametrize("mark", ["legacy", "recorded"])
def test_a_cluster_made_before_networks_were_shared_keeps_its_own_vpc(
        tmp_path: Path, mark: str) -> None:
    workspace = tmp_path / "old"
    workspace.mkdir()
    if mark == "legacy":  # a stack written by an earlier skyc: engine file and keys
        (workspace / ENGINE_FILE).write_text("terraform\n")
        (workspace / "keys").mkdir()
    else:
        (workspace / NETWORK_MODE_FILE).write_text("own\n")
    stack = build_stack("old", _placement(), ResourceCandidate(index=0), config=CONFIG,
                        workspace=workspace)
    assert {"aws_vpc", "aws_subnet", "aws_internet_gateway"} <= _types(stack)
    assert "vpc_id" not in stack.variables
    doc = json.loads(emit(stack, "terraform")["main.tf.json"])
    internal = doc["resource"]["aws_vpc_security_group_ingress_rule"]["cluster"]
    assert internal["cidr_ipv4"] == "10.0.0.0/16"
    workspace_values(stack, workspace)
    assert (workspace / NETWORK_MODE_FILE).read_text() == "own\n"


def test_the_network_stack_is_deterministic_and_a_new_zone_moves_no_subnet() -> None:
    one = network_stack("us-east-1", ["use1-az4"], "alice@laptop", CONFIG)
    two = network_stack("us-east-1", ["use1-az4", "use1-az1", None], "alice@laptop", CONFIG)
    first = json.loads(emit(one, "terraform")["main.tf.json"])
    both = json.loads(emit(two, "terraform")["main.tf.json"])
    assert emit(one, "terraform") == emit(
        network_stack("us-east-1", ["use1-az4"], "alice@laptop", CONFIG), "terraform")
    subnets = both["resource"]["aws_subnet"]
    assert first["resource"]["aws_subnet"]["subnet_use1_az4"] == subnets["subnet_use1_az4"]
    assert [subnets[k]["cidr_block"] for k in ("subnet_use1_az4", "subnet_use1_az1",
                                               "subnet_any")] == [
        subnet_cidr(0), subnet_cidr(1), subnet_cidr(2)] == [
        "10.0.0.0/20", "10.0.16.0/20", "10.0.32.0/20"]
    assert "availability_zone_id" not in subnets["subnet_any"]
    assert set(both["output"]) == {"vpc_id", "subnet_use1_az4", "subnet_use1_az1",
                                   "subnet_any"}
    vpc = both["resource"]["aws_vpc"]["vpc"]
    assert vpc["tags"]["skyc-network"] == "aws-us-east-1"
    assert vpc["tags"]["skyc-owner"] == "alice@laptop"
    part = network_part("aws")
    assert part is not None and part.network_inputs(
        {"vpc_id": "vpc-9", "subnet_use1_az1": "subnet-3"}, "use1-az1") == {
        "vpc_id": "vpc-9", "subnet_id": "subnet-3"}
    assert network_part("local") is None and network_part("kubernetes") is None


def test_a_network_holds_at_most_sixteen_zones() -> None:
    from skyc.errors import ConfigError

    with pytest.raises(ConfigError, match="at most 16"):
        network_stack("us-east-1", [f"use1-az{i}" for i in range(17)], "a@b", CONFIG)


def test_the_network_program_runs_under_pulumi_s_mock_runtime() -> None:
    """The network stack's Pulumi program with the real pulumi-aws classes, under the
    mock runtime (no Pulumi CLI or provider plugin can run here): every resource is
    made with the arguments the Terraform stack gives, the subnets wait for the route."""
    from skyc.stacks.pulumi_preview import run_program

    stack = network_stack("us-east-1", ["use1-az2", None], "alice@laptop", CONFIG)
    recorded = {r.name: r for r in run_program(emit(stack, "pulumi")["__main__.py"],
                                               stack=stack.name, config={})}
    assert set(recorded) == {r.key for r in stack.resources} | {"aws"}
    assert recorded["vpc"].type == "aws:ec2/vpc:Vpc"
    assert recorded["vpc"].inputs["cidrBlock"] == "10.0.0.0/16"
    subnet = recorded["subnet_use1_az2"].inputs
    assert (subnet["availabilityZoneId"], subnet["cidrBlock"], subnet["vpcId"]) == (
        "use1-az2", "10.0.0.0/20", "vpc-id")
    assert recorded["subnet_any"].inputs["cidrBlock"] == "10.0.16.0/20"
    assert recorded["route_use1_az2"].inputs["routeTableId"] == "route_table-id"


GCP = SkycConfig(user="alice@laptop", gcp={"project": "team-proj"})


def _gcp(zone: str = "us-central1-a") -> Placement:
    return Placement(cloud="gcp", region="us-central1", zone=zone,
                     instance_type="n2-standard-8", num_nodes=2, hourly_cost=0.8)


def test_a_new_gcp_cluster_takes_the_network_as_inputs_and_lets_in_only_its_nodes(
        tmp_path: Path) -> None:
    from skyc.stacks.pulumi_preview import run_program

    stack = build_stack("web", _gcp(), ResourceCandidate(index=0), config=GCP,
                        workspace=tmp_path / "web")
    kinds = {r.types["pulumi"] for r in stack.resources}
    assert not kinds & {"gcp.compute.Network", "gcp.compute.Subnetwork"}
    inputs = {"ssh_keys": "skyc:ssh-ed25519 AAAA k", "vpc_id": "projects/p/global/networks/n",
              "subnet_id": "projects/p/regions/us-central1/subnetworks/n"}
    recorded = {r.name: r for r in run_program(emit(stack, "pulumi")["__main__.py"],
                                               stack=stack.name, config=inputs)}
    internal = recorded["firewall_internal"].inputs
    tag = internal["targetTags"][0]
    assert internal["sourceTags"] == [tag] and "sourceRanges" not in internal
    assert internal["network"] == inputs["vpc_id"]
    for node in ("node_0", "node_1"):
        nic = recorded[node].inputs["networkInterfaces"][0]
        assert (nic["network"], nic["subnetwork"]) == (inputs["vpc_id"], inputs["subnet_id"])
        assert tag in recorded[node].inputs["tags"]
    values = workspace_values(stack, tmp_path / "web")
    assert {k: values[k] for k in PENDING} == PENDING


def test_a_gcp_cluster_made_before_networks_were_shared_keeps_its_own(tmp_path: Path) -> None:
    workspace = tmp_path / "old"
    workspace.mkdir()
    (workspace / NETWORK_MODE_FILE).write_text("own\n")
    stack = build_stack("old", _gcp(), ResourceCandidate(index=0), config=GCP,
                        workspace=workspace)
    kinds = {r.types["pulumi"] for r in stack.resources}
    assert {"gcp.compute.Network", "gcp.compute.Subnetwork"} <= kinds
    assert "vpc_id" not in stack.variables
    assert stack.resource("firewall_internal").properties["source_ranges"] == ["10.0.0.0/20"]


def test_the_gcp_network_program_runs_under_pulumi_s_mock_runtime() -> None:
    """The region's network with the real pulumi-gcp classes under the mock runtime (no
    Pulumi CLI or provider plugin can run here)."""
    from skyc.stacks.pulumi_preview import run_program

    part = network_part("gcp")
    assert part is not None and part.network_name("us-central1") == "network-gcp-us-central1"
    stack = part.network_stack("us-central1", ["us-central1-a", "us-central1-b"],
                               "alice@laptop", GCP)
    assert emit(stack, "pulumi") == emit(part.network_stack(
        "us-central1", ["us-central1-a", "us-central1-b"], "alice@laptop", GCP), "pulumi")
    recorded = {r.name: r for r in run_program(emit(stack, "pulumi")["__main__.py"],
                                               stack=stack.name, config={})}
    assert recorded["network"].inputs["autoCreateSubnetworks"] is False
    subnet = recorded["subnetwork"].inputs
    assert (subnet["region"], subnet["ipCidrRange"], subnet["network"]) == (
        "us-central1", "10.0.0.0/16", "network-id")
    assert recorded["network"].inputs["name"].startswith("skyc-net-us-central1-")
    # Every zone of the region uses the one subnetwork.
    outputs = {"vpc_id": "n", "subnet_id": "s"}
    assert part.network_inputs(outputs, "us-central1-b") == {"vpc_id": "n", "subnet_id": "s"}
