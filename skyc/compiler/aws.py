"""Lowering onto AWS: one VPC per cluster, ``num_nodes`` EC2 instances.

Resources: VPC, a subnet in the placement's zone (an AWS zone ID such as
``use1-az1``), internet gateway, route table with a default route, a security
group (SSH, the task's ports, all traffic between the cluster's nodes, all
egress) written as separate rule resources, the cluster's key pair (public key
from the ``ssh_public_key`` variable), a cluster placement group for multi-node
clusters, EFA interfaces (with an Elastic IP each) where ``network_tier: best``
and the instance type has EFA, and the instances.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from skyc.compiler import aws_errors, aws_images
from skyc.compiler.base import NODE_NAME_EXPR, BuildRequest, Capabilities, node_name
from skyc.compiler.keys import ensure_key_pair, private_key_path
from skyc.compiler.templates import render
from skyc.config import SkycConfig
from skyc.errors import ConfigError, EngineError, ProvisionError, UnsupportedFeature
from skyc.nodes import Node
from skyc.optimizer.plan import Placement
from skyc.stacks.model import Output, Resource, Stack, Variable, ref
from skyc.task.candidate import ResourceCandidate

CAPABILITIES = Capabilities(
    cloud="aws",
    spot=True,
    multi_node=True,
    placement_groups=True,
    open_ports=True,
    stop_start=True,
    custom_images=True,
    needs_providers=True,
    max_nodes=512,  # one cluster placement group holds at most a few hundred instances
)

SSH_USER = "ubuntu"  # the user of the images in data/aws_images.csv
PROVIDER_VERSION = ">= 5.40, < 6.0"
# The provider retries throttling and capacity errors; with its default (25) a
# persistent InsufficientInstanceCapacity keeps an apply waiting for many minutes
# instead of failing over to the next zone. Two retries ride out throttling.
MAX_RETRIES = 2
# Services the stack calls; all are pointed at aws.endpoint_url when it is set.
ENDPOINT_SERVICES = ("ec2", "iam", "sts")

VPC_CIDR = "10.0.0.0/16"
SUBNET_CIDR = "10.0.0.0/20"

# gp3 root volumes: (iops, throughput MiB/s) per disk tier. "low" is gp3's
# baseline (3000, 125), which needs no explicit values.
DISK_TIERS: dict[str, tuple[int, int]] = {
    "low": (3000, 125),
    "medium": (6000, 250),
    "high": (12000, 500),
    "ultra": (16000, 1000),
    "best": (16000, 1000),
}
DEFAULT_DISK_TIER = "medium"

# Instance types with an Elastic Fabric Adapter (one EFA interface is attached).
EFA_INSTANCE_TYPES = frozenset({
    "p4d.24xlarge", "p4de.24xlarge", "p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge",
    "p6-b200.48xlarge", "g5.8xlarge", "g5.12xlarge", "g5.16xlarge", "g5.24xlarge",
    "g5.48xlarge", "g6.8xlarge", "g6.12xlarge", "g6.16xlarge", "g6.24xlarge", "g6.48xlarge",
    "g6e.8xlarge", "g6e.12xlarge", "g6e.16xlarge", "g6e.24xlarge", "g6e.48xlarge",
    "trn1.32xlarge", "trn1n.32xlarge", "trn2.48xlarge", "c5n.18xlarge", "c6in.32xlarge",
    "hpc7g.16xlarge",
})

VPC = "aws_vpc.main"
SUBNET = "aws_subnet.main"
SG = "aws_security_group.main"


def _tags(labels: dict[str, str], name: str) -> dict[str, str]:
    return {**labels, "Name": name}


def provider_settings(region: str, config: SkycConfig) -> dict[str, Any]:
    settings: dict[str, Any] = {"region": region, "max_retries": MAX_RETRIES}
    if config.aws.profile:
        settings["profile"] = config.aws.profile
    if config.aws.endpoint_url:
        settings["endpoints"] = {svc: config.aws.endpoint_url for svc in ENDPOINT_SERVICES}
        settings.update(
            skip_credentials_validation=True,
            skip_requesting_account_id=True,
            skip_metadata_api_check=True,
            s3_use_path_style=True,
        )
    return settings


def _port_range(spec: str) -> tuple[int, int]:
    match = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", str(spec))
    if not match:
        raise ConfigError(f"ports: {spec!r} is not a port or a range like 9000-9010")
    low = int(match.group(1))
    high = int(match.group(2) or low)
    if not 1 <= low <= high <= 65535:
        raise ConfigError(f"ports: {spec!r} is outside 1-65535")
    return low, high


def root_volume(candidate: ResourceCandidate) -> dict[str, Any]:
    tier = candidate.disk_tier or DEFAULT_DISK_TIER
    if tier not in DISK_TIERS:
        raise ConfigError(f"disk_tier: {tier!r} is not one of {', '.join(DISK_TIERS)}")
    if candidate.disk_size < 8:
        raise ConfigError(f"disk_size: {candidate.disk_size} GiB is below the 8 GiB minimum")
    volume: dict[str, Any] = {
        "delete_on_termination": True,
        "encrypted": True,
        "volume_size": candidate.disk_size,
        "volume_type": "gp3",
    }
    iops, throughput = DISK_TIERS[tier]
    iops = max(3000, min(iops, 500 * candidate.disk_size))  # gp3: at most 500 IOPS per GiB
    throughput = min(throughput, iops // 4)                 # gp3: at most 0.25 MiB/s per IOPS
    if (iops, throughput) != DISK_TIERS["low"]:
        volume.update(iops=iops, throughput=throughput)
    return volume


def _network(stack: Stack, labels: dict[str, str], cluster: str, zone: str | None) -> None:
    stack.add(Resource(type="aws_vpc", name="main", properties={
        "cidr_block": VPC_CIDR, "enable_dns_hostnames": True, "enable_dns_support": True,
        "tags": _tags(labels, f"skyc-{cluster}"),
    }))
    subnet: dict[str, Any] = {
        "vpc_id": ref(VPC, "id"), "cidr_block": SUBNET_CIDR,
        "map_public_ip_on_launch": True, "tags": _tags(labels, f"skyc-{cluster}"),
    }
    if zone:
        subnet["availability_zone_id"] = zone
    stack.add(Resource(type="aws_subnet", name="main", properties=subnet))
    stack.add(Resource(type="aws_internet_gateway", name="main", properties={
        "vpc_id": ref(VPC, "id"), "tags": _tags(labels, f"skyc-{cluster}"),
    }))
    stack.add(Resource(type="aws_route_table", name="main", properties={
        "vpc_id": ref(VPC, "id"), "tags": _tags(labels, f"skyc-{cluster}"),
    }))
    stack.add(Resource(type="aws_route", name="internet", properties={
        "route_table_id": ref("aws_route_table.main", "id"),
        "destination_cidr_block": "0.0.0.0/0",
        "gateway_id": ref("aws_internet_gateway.main", "id"),
    }))
    stack.add(Resource(type="aws_route_table_association", name="main", properties={
        "subnet_id": ref(SUBNET, "id"), "route_table_id": ref("aws_route_table.main", "id"),
    }))


def _firewall(
    stack: Stack, labels: dict[str, str], cluster: str, ports: tuple[str, ...], efa: bool
) -> None:
    stack.add(Resource(type="aws_security_group", name="main", properties={
        "name": f"skyc-{cluster}", "description": f"skyc cluster {cluster}",
        "vpc_id": ref(VPC, "id"), "tags": _tags(labels, f"skyc-{cluster}"),
    }))
    ranges = sorted({(22, 22), *(_port_range(p) for p in ports)})
    for low, high in ranges:
        name = f"tcp_{low}" if low == high else f"tcp_{low}_{high}"
        stack.add(Resource(type="aws_vpc_security_group_ingress_rule", name=name, properties={
            "security_group_id": ref(SG, "id"), "cidr_ipv4": "0.0.0.0/0",
            "ip_protocol": "tcp", "from_port": low, "to_port": high,
            "tags": _tags(labels, f"skyc-{cluster}-{name}"),
        }))
    # All traffic between the cluster's nodes (the VPC holds nothing else).
    stack.add(Resource(type="aws_vpc_security_group_ingress_rule", name="cluster", properties={
        "security_group_id": ref(SG, "id"), "cidr_ipv4": VPC_CIDR,
        "ip_protocol": "-1", "tags": _tags(labels, f"skyc-{cluster}-internal"),
    }))
    if efa:  # EFA traffic must be allowed to and from the security group itself
        for kind in ("ingress", "egress"):
            stack.add(Resource(type=f"aws_vpc_security_group_{kind}_rule", name="efa",
                               properties={
                "security_group_id": ref(SG, "id"), "referenced_security_group_id": ref(SG, "id"),
                "ip_protocol": "-1", "tags": _tags(labels, f"skyc-{cluster}-efa-{kind}"),
            }))
    stack.add(Resource(type="aws_vpc_security_group_egress_rule", name="all", properties={
        "security_group_id": ref(SG, "id"), "cidr_ipv4": "0.0.0.0/0", "ip_protocol": "-1",
        "tags": _tags(labels, f"skyc-{cluster}-egress"),
    }))


def uses_efa(placement: Placement, candidate: ResourceCandidate) -> bool:
    return candidate.network_tier == "best" and placement.instance_type in EFA_INSTANCE_TYPES


def wants_placement_group(placement: Placement, candidate: ResourceCandidate) -> bool:
    """A cluster placement group for multi-node clusters that ask for the best network.

    Packing nodes close together narrows the capacity AWS can offer (more
    InsufficientInstanceCapacity), so it is done only where the interconnect was
    asked for. (EC2-compatible APIs such as moto also lack placement groups.)
    """
    return placement.num_nodes > 1 and candidate.network_tier == "best"


def _instances(
    stack: Stack, labels: dict[str, str], cluster: str,
    placement: Placement, candidate: ResourceCandidate,
) -> str:
    """Adds the instances (and EFA interfaces); returns the public-IP expression."""
    n = placement.num_nodes
    name_tag = "${format(\"skyc-%s-%s\", \"" + cluster + "\", " + NODE_NAME_EXPR + ")}"
    instance: dict[str, Any] = {
        "count": n,
        "ami": aws_images.choose_image(placement, candidate),
        "instance_type": placement.instance_type,
        "key_name": ref("aws_key_pair.main", "key_name"),
        "root_block_device": root_volume(candidate),
        "metadata_options": {"http_endpoint": "enabled", "http_tokens": "required"},
        "user_data": render("node_bootstrap.sh.j2", cluster=cluster, ssh_user=SSH_USER),
        "tags": _tags(labels, name_tag),
        "volume_tags": dict(labels),
    }
    ignore = ["vpc_security_group_ids"]  # not reported back by every EC2-compatible API
    if placement.use_spot:
        instance["instance_market_options"] = {
            "market_type": "spot",
            "spot_options": {
                "instance_interruption_behavior": "terminate",
                "spot_instance_type": "one-time",
            },
        }
        ignore.append("instance_market_options")
    instance["lifecycle"] = {"ignore_changes": sorted(ignore)}
    deps = ["aws_route.internet", "aws_route_table_association.main"]
    if wants_placement_group(placement, candidate):
        stack.add(Resource(type="aws_placement_group", name="main", properties={
            "name": f"skyc-{cluster}", "strategy": "cluster",
            "tags": _tags(labels, f"skyc-{cluster}"),
        }))
        instance["placement_group"] = ref("aws_placement_group.main", "id")
    public_ip = "${aws_instance.node[*].public_ip}"
    if uses_efa(placement, candidate):
        stack.add(Resource(type="aws_network_interface", name="efa", properties={
            "count": n, "subnet_id": ref(SUBNET, "id"), "security_groups": [ref(SG, "id")],
            "interface_type": "efa", "tags": _tags(labels, name_tag),
        }))
        stack.add(Resource(type="aws_eip", name="node", properties={
            "count": n, "domain": "vpc",
            "network_interface": "${aws_network_interface.efa[count.index].id}",
            "tags": _tags(labels, name_tag),
        }, dependencies=["aws_internet_gateway.main"]))
        instance["network_interface"] = {
            "device_index": 0,
            "network_interface_id": "${aws_network_interface.efa[count.index].id}",
        }
        public_ip = "${aws_eip.node[*].public_ip}"
    else:
        instance.update(
            subnet_id=ref(SUBNET, "id"),
            vpc_security_group_ids=[ref(SG, "id")],
            associate_public_ip_address=True,
        )
    stack.add(Resource(type="aws_instance", name="node", properties=instance, dependencies=deps))
    return public_ip


def build(request: BuildRequest) -> Stack:
    cluster, placement, candidate = request.cluster, request.placement, request.candidate
    config = request.config
    if not placement.region:
        raise ConfigError("aws placement has no region", hint="give infra as aws/<region>")
    if not placement.instance_type:
        raise UnsupportedFeature("aws placement has no instance_type")
    labels = request.labels
    stack = Stack(
        name=cluster, cloud="aws", region=placement.region, labels=labels,
        providers={"aws": provider_settings(placement.region, config)},
        required_providers={"aws": {"source": "hashicorp/aws", "version": PROVIDER_VERSION}},
        variables={"ssh_public_key": Variable(
            description="OpenSSH public key of the cluster's key pair (skyc generates it)")},
        backend=config.backend,
    )
    _network(stack, labels, cluster, placement.zone)
    _firewall(stack, labels, cluster, candidate.ports, uses_efa(placement, candidate))
    stack.add(Resource(type="aws_key_pair", name="main", properties={
        "key_name": f"skyc-{cluster}", "public_key": "${var.ssh_public_key}",
        "tags": _tags(labels, f"skyc-{cluster}"),
    }))
    public_ip = _instances(stack, labels, cluster, placement, candidate)
    stack.outputs = {
        "instance_ids": Output(value="${aws_instance.node[*].id}"),
        "private_ips": Output(value="${aws_instance.node[*].private_ip}"),
        "public_ips": Output(value=public_ip),
        "ssh_user": Output(value=SSH_USER),
    }
    return stack


def workspace_values(stack: Stack, workspace: Path) -> dict[str, Any]:
    """Creates the cluster's key pair in the workspace; its public key is the one input."""
    return {"ssh_public_key": ensure_key_pair(workspace)}


def nodes_from_outputs(
    cluster: str, outputs: dict[str, Any], *, config: SkycConfig, workspace: Path
) -> list[Node]:
    try:
        private = list(outputs["private_ips"])
        public = list(outputs["public_ips"])
        user = str(outputs["ssh_user"])
    except (KeyError, TypeError) as exc:
        raise EngineError(f"cluster {cluster}: stack outputs lack {exc}") from None
    if len(private) != len(public):
        raise EngineError(f"cluster {cluster}: {len(private)} private but {len(public)} public IPs")
    key = str(private_key_path(workspace))
    return [
        Node(name=node_name(rank), rank=rank, transport="ssh", ip=str(priv),
             host=str(pub or priv), port=22, user=user, identity_file=key)
        for rank, (priv, pub) in enumerate(zip(private, public, strict=True))
    ]


def classify(
    diagnostics: list[dict[str, Any]], placement: Placement | None
) -> ProvisionError | None:
    return aws_errors.classify(diagnostics, placement)
