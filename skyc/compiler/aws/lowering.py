"""Lowering onto AWS: ``num_nodes`` EC2 instances in the region's shared network.

The VPC and the zone's subnet are the region's network stack's
(:mod:`skyc.compiler.aws.network`), given to the cluster's stack as the inputs
``vpc_id`` and ``subnet_id``. A cluster whose stack was written before networks were
shared keeps its own: VPC, a subnet in the placement's zone (an AWS zone ID such as
``use1-az1``), internet gateway, route table with a default route.

Resources of every cluster: a security
group (SSH, the task's ports, all traffic between the cluster's nodes, all
egress) written as separate rule resources, the cluster's key pair (public key
from the ``ssh_public_key`` variable), a cluster placement group for multi-node
clusters, and the instances. Where ``network_tier: best`` and the instance type
has EFA, each node's one network interface is an EFA made at launch from the
cluster's launch template, with a public address of its own (a cluster with its own
network keeps the EFA interface and Elastic IP it was made with: Elastic IPs are 5
per region). The managed-jobs controller's
cluster also gets an IAM role and instance profile (skyc.compiler.aws.roles).

Images (skyc.compiler.aws.images): the table's AMI for the region, or the task's;
nodes whose accelerator needs a newer driver than SkyPilot's GPU image carries
(B200, B300, H200), and NVIDIA nodes with EFA, boot the Deep Learning Base OSS
Nvidia Driver GPU AMI, which EC2 resolves from AWS's public SSM parameter at
launch: such nodes are launched from a launch template holding that image and the
root volume (the provider cannot map a root volume onto an image it cannot look
up). The root volume is never smaller than the image.

Names: the key pair, security group, launch template, placement group, IAM role and
every ``Name`` tag are ``skyc-<cluster>-<owner hash>[-<what>]`` (see
:class:`~skyc.compiler.base.BuildRequest`), so two people's clusters of one name in
one account never collide; a cluster with no recorded owner keeps ``skyc-<cluster>``.
Every resource that takes tags carries ``skyc-cluster``, ``skyc-owner`` and the
task's labels.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from skyc.compiler import shared_network
from skyc.compiler.aws import images, network, roles
from skyc.compiler.aws import tags as tag_rules
from skyc.compiler.aws.resources import TYPES, resource
from skyc.compiler.aws.storage import STORE
from skyc.compiler.base import BuildRequest, node_name, port_range
from skyc.compiler.keys import ensure_key_pair
from skyc.compiler.templates import render
from skyc.errors import ConfigError, UnsupportedFeature
from skyc.model.plan import Placement
from skyc.model.stack import Block, Output, Provider, Ref, Resource, Stack, Var, Variable
from skyc.settings.config import SkycConfig
from skyc.task.candidate import ResourceCandidate

SSH_USER = "ubuntu"  # the user of the images in skyc/compiler/data/aws_images.csv
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
# baseline (3000, 125), which needs no explicit values; medium and high are what
# SkyPilot provisions for them on AWS (gp3, its IOPS and IOPS/16 MiB/s), never more;
# ultra and best stay on gp3's ceiling, well under the io2 volume SkyPilot asks for.
DISK_TIERS: dict[str, tuple[int, int]] = {
    "low": (3000, 125),
    "medium": (3500, 218),
    "high": (7000, 437),
    "ultra": (16000, 1000),
    "best": (16000, 1000),
}
# The root device of the images EC2 resolves at launch (Ubuntu AMIs): their launch
# template maps the root volume by this name.
ROOT_DEVICE = "/dev/sda1"
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


# An on-demand node's power state is an input of its stack: ``skyc stop`` re-applies the
# same stack with "stopped" (disks kept), ``skyc start`` with "running". The value lives
# in the workspace's POWER_FILE; spot instances (one-time requests) cannot be stopped.
POWER_VARIABLE = "power_state"
POWER_FILE = "power_state"


def _resource(kind: str, key: str, name: str, properties: dict[str, Any],
              **fields: Any) -> Resource:
    return resource(kind, key, name, properties, **fields)


def _counted(kind: str, name: str, rank: int) -> dict[str, str]:
    """The node's terraform address from when nodes were one resource with a count."""
    return {"terraform": f"{TYPES[kind][0]}.{name}[{rank}]"}


def _block(pulumi_args: str, **values: Any) -> Block:
    return Block(values=values, args={"pulumi": pulumi_args})


def _tags(labels: dict[str, str], name: str) -> dict[str, str]:
    return {**labels, "Name": name}


def provider(region: str, config: SkycConfig,
             services: tuple[str, ...] = ENDPOINT_SERVICES) -> Provider:
    """The AWS provider in ``region``; with ``aws.endpoint_url``, ``services`` are
    pointed at that endpoint."""
    settings: dict[str, Any] = {"region": region, "max_retries": MAX_RETRIES}
    if config.aws.profile:
        settings["profile"] = config.aws.profile
    if config.aws.endpoint_url:
        settings["endpoints"] = [_block(
            "aws.ProviderEndpointArgs",
            **{svc: config.aws.endpoint_url for svc in services},
        )]
        settings.update(
            skip_credentials_validation=True,
            skip_requesting_account_id=True,
            skip_metadata_api_check=True,
            s3_use_path_style=True,
        )
    return Provider(types={"terraform": "aws", "pulumi": "aws.Provider"}, settings=settings,
                    source="hashicorp/aws", version=PROVIDER_VERSION)


def volume_settings(candidate: ResourceCandidate, image: images.Image) -> dict[str, Any]:
    """The root volume: ``disk_size`` GiB (at least the image's size) of gp3 at the
    ``disk_tier``'s IOPS and throughput."""
    tier = candidate.disk_tier or DEFAULT_DISK_TIER
    if tier not in DISK_TIERS:
        raise ConfigError(f"disk_tier: {tier!r} is not one of {', '.join(DISK_TIERS)}")
    if candidate.disk_size < image.disk_gib:
        what = f"the image {image.tag}" if image.tag else "EC2's smallest root volume"
        raise ConfigError(
            f"disk_size: {candidate.disk_size} GiB is smaller than {what} "
            f"({image.disk_gib} GiB)", hint=f"set disk_size: {image.disk_gib} or more")
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


def root_volume(candidate: ResourceCandidate, image: images.Image) -> Block:
    return _block("aws.ec2.InstanceRootBlockDeviceArgs", **volume_settings(candidate, image))


def _launch_template(stack: Stack, labels: dict[str, str], name: str,
                     candidate: ResourceCandidate, image: images.Image,
                     efa_subnet: Var | None = None) -> Block:
    """A launch template for an image EC2 resolves at launch (``resolve:ssm:``): the
    provider cannot map a root volume onto an image it cannot look up, so the template
    carries both and the nodes are launched from it. ``efa_subnet``: the nodes' one
    network interface is an EFA made at launch in that subnet, with a public address
    of its own (no Elastic IP: their quota is 5 per region)."""
    volume = volume_settings(candidate, image)
    ebs = {k: (str(v).lower() if isinstance(v, bool) else v) for k, v in volume.items()}
    template: dict[str, Any] = {
        "name": f"skyc-{name}", "image_id": image.ref, "update_default_version": True,
        "block_device_mappings": [_block(
            "aws.ec2.LaunchTemplateBlockDeviceMappingArgs", device_name=ROOT_DEVICE,
            ebs=_block("aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs", **ebs))],
        "tags": _tags(labels, f"skyc-{name}"),
    }
    if efa_subnet is not None:
        template["network_interfaces"] = [_block(
            "aws.ec2.LaunchTemplateNetworkInterfaceArgs", device_index=0,
            network_card_index=0, interface_type="efa", associate_public_ip_address="true",
            delete_on_termination="true", subnet_id=efa_subnet, security_groups=[SG_ID])]
    stack.add(_resource("launch_template", "launch_template", "main", template))
    return _block("aws.ec2.InstanceLaunchTemplateArgs",
                  id=Ref(resource="launch_template", attribute="id"), version="$Default")


VPC_ID = Ref(resource="vpc", attribute="id")
SUBNET_ID = Ref(resource="subnet", attribute="id")
SG_ID = Ref(resource="security_group", attribute="id")


class _Net(NamedTuple):
    """Where a cluster's nodes go: the VPC, the subnet, what an instance waits for, and
    whether the VPC is the cluster's own."""

    vpc: Ref | Var
    subnet: Ref | Var
    depends_on: list[str]
    own: bool


OWN_NETWORK = _Net(VPC_ID, SUBNET_ID, ["route", "route_table_association"], own=True)
SHARED_NETWORK = _Net(shared_network.VPC, shared_network.SUBNET, [], own=False)


def _network(stack: Stack, labels: dict[str, str], name: str, zone: str | None) -> None:
    tags = _tags(labels, f"skyc-{name}")
    stack.add(_resource("vpc", "vpc", "main", {
        "cidr_block": VPC_CIDR, "enable_dns_hostnames": True, "enable_dns_support": True,
        "tags": tags,
    }))
    subnet: dict[str, Any] = {
        "vpc_id": VPC_ID, "cidr_block": SUBNET_CIDR, "map_public_ip_on_launch": True,
        "tags": tags,
    }
    if zone:
        subnet["availability_zone_id"] = zone
    stack.add(_resource("subnet", "subnet", "main", subnet))
    stack.add(_resource("internet_gateway", "internet_gateway", "main",
                        {"vpc_id": VPC_ID, "tags": tags}))
    stack.add(_resource("route_table", "route_table", "main", {"vpc_id": VPC_ID, "tags": tags}))
    stack.add(_resource("route", "route", "internet", {
        "route_table_id": Ref(resource="route_table", attribute="id"),
        "destination_cidr_block": "0.0.0.0/0",
        "gateway_id": Ref(resource="internet_gateway", attribute="id"),
    }))
    stack.add(_resource("route_table_association", "route_table_association", "main", {
        "subnet_id": SUBNET_ID, "route_table_id": Ref(resource="route_table", attribute="id"),
    }))


# A rule whose source is its own security group: EC2 reports the group back, but not
# every EC2-compatible API does (moto leaves it out, and the engine would then try to
# change the rule at every apply).
SELF_RULE_UNREPORTED = ("referenced_security_group_id",)


def _firewall(
    stack: Stack, labels: dict[str, str], request: BuildRequest, efa: bool, net: _Net
) -> None:
    cluster, name_on_cloud = request.cluster, request.name_on_cloud
    stack.add(_resource("security_group", "security_group", "main", {
        "name": f"skyc-{name_on_cloud}", "description": f"skyc cluster {cluster}",
        "vpc_id": net.vpc, "tags": _tags(labels, f"skyc-{name_on_cloud}"),
    }))
    ranges = sorted({(22, 22), *(port_range(p) for p in request.candidate.ports)})
    for low, high in ranges:
        name = f"tcp_{low}" if low == high else f"tcp_{low}_{high}"
        stack.add(_resource("ingress_rule", f"ingress_{name}", name, {
            "security_group_id": SG_ID, "cidr_ipv4": "0.0.0.0/0",
            "ip_protocol": "tcp", "from_port": low, "to_port": high,
            "tags": _tags(labels, f"skyc-{name_on_cloud}-{name}"),
        }))
    # All traffic between the cluster's nodes: from its own group in a shared VPC (other
    # clusters' nodes are in the VPC too), from the VPC's range in its own.
    source = ({"cidr_ipv4": VPC_CIDR} if net.own
              else {"referenced_security_group_id": SG_ID})
    stack.add(_resource("ingress_rule", "ingress_cluster", "cluster", {
        "security_group_id": SG_ID, **source,
        "ip_protocol": "-1", "tags": _tags(labels, f"skyc-{name_on_cloud}-internal"),
    }, ignore_changes=[] if net.own else list(SELF_RULE_UNREPORTED)))
    if efa:  # EFA traffic must be allowed to and from the security group itself
        for kind in ("ingress", "egress"):
            stack.add(_resource(f"{kind}_rule", f"{kind}_efa", "efa", {
                "security_group_id": SG_ID, "referenced_security_group_id": SG_ID,
                "ip_protocol": "-1",
                "tags": _tags(labels, f"skyc-{name_on_cloud}-efa-{kind}"),
            }, ignore_changes=list(SELF_RULE_UNREPORTED)))
    stack.add(_resource("egress_rule", "egress_all", "all", {
        "security_group_id": SG_ID, "cidr_ipv4": "0.0.0.0/0", "ip_protocol": "-1",
        "tags": _tags(labels, f"skyc-{name_on_cloud}-egress"),
    }))


class _Role(NamedTuple):
    """An IAM role the nodes carry: its resources' keys and name, what it is for, its
    inline policy's name and document."""

    key: str          # controller / node: <key>_role, <key>_profile
    name: str         # the engine-facing resource name
    description: str
    policy_key: str
    policy_name: str
    policy: str


def _node_role(stack: Stack, labels: dict[str, str], request: BuildRequest,
               role_spec: _Role) -> Ref:
    """An IAM role for EC2, its inline policy and the instance profile the cluster's
    nodes carry (skyc.compiler.aws.roles); returns the profile's name."""
    name = roles.role_name(request.cluster, request.owner_hash)
    tags = _tags(labels, name)
    stack.add(_resource("iam_role", f"{role_spec.key}_role", role_spec.name, {
        "name": name, "description": role_spec.description,
        "assume_role_policy": roles.trust_policy(), "tags": tags,
    }))
    role = Ref(resource=f"{role_spec.key}_role", attribute="name")
    stack.add(_resource("iam_role_policy", role_spec.policy_key, role_spec.name, {
        "name": role_spec.policy_name, "role": role, "policy": role_spec.policy,
    }))
    stack.add(_resource("instance_profile", f"{role_spec.key}_profile", role_spec.name, {
        "name": name, "role": role, "tags": tags,
    }))
    return Ref(resource=f"{role_spec.key}_profile", attribute="name")


def _controller_role(stack: Stack, labels: dict[str, str], request: BuildRequest) -> Ref:
    """The managed-jobs controller's role: it provisions job clusters."""
    return _node_role(stack, labels, request, _Role(
        "controller", "controller",
        f"skyc jobs controller {request.cluster}: provisions job clusters",
        "controller_policy", "skyc-job-clusters", roles.controller_policy()))


def _bucket_role(stack: Stack, labels: dict[str, str], request: BuildRequest) -> Ref | None:
    """The role of a cluster whose task mounts S3 buckets: it reaches those buckets and
    nothing else (skyc.compiler.aws.roles.bucket_policy); None for a task without S3
    buckets."""
    grants = [(g.bucket, g.write) for g in request.candidate.buckets
              if g.store in (None, STORE)]
    if not grants:
        return None
    return _node_role(stack, labels, request, _Role(
        "node", "nodes", f"skyc cluster {request.cluster}: the buckets its task mounts",
        "bucket_policy", "skyc-buckets", roles.bucket_policy(grants)))


def uses_efa(placement: Placement, candidate: ResourceCandidate) -> bool:
    return candidate.network_tier == "best" and placement.instance_type in EFA_INSTANCE_TYPES


def wants_placement_group(placement: Placement, candidate: ResourceCandidate) -> bool:
    """A cluster placement group for multi-node clusters that ask for the best network.

    Packing nodes close together narrows the capacity AWS can offer (more
    InsufficientInstanceCapacity), so it is done only where the interconnect was
    asked for. (EC2-compatible APIs such as moto also lack placement groups.)
    """
    return placement.num_nodes > 1 and candidate.network_tier == "best"


def _instance_settings(
    stack: Stack, labels: dict[str, str], request: BuildRequest,
) -> tuple[dict[str, Any], list[str]]:
    """Arguments every node shares, and the changes its engine ignores."""
    placement, candidate, name = request.placement, request.candidate, request.name_on_cloud
    image = images.select_image(placement, candidate, efa=uses_efa(placement, candidate))
    settings: dict[str, Any] = {
        "instance_type": placement.instance_type,
        "key_name": Ref(resource="key_pair", attribute="key_name"),
        "metadata_options": _block("aws.ec2.InstanceMetadataOptionsArgs",
                                   http_endpoint="enabled", http_tokens="required"),
        "user_data": render("node_bootstrap.sh.j2", cluster=request.cluster,
                            ssh_user=SSH_USER, bucket_tools=bool(request.candidate.buckets)),
        "volume_tags": dict(labels),
        # A shutdown from inside the node (autostop) stops an on-demand instance and
        # keeps its disk; a one-time spot instance can only terminate.
        "instance_initiated_shutdown_behavior": "terminate" if placement.use_spot else "stop",
    }
    # EFA nodes in a shared network get their interface (and public address) from the
    # template; those of a cluster with its own network keep an ENI and Elastic IP each.
    efa_at_launch = uses_efa(placement, candidate) and request.shared_network
    if image.resolved_at_launch or efa_at_launch:
        settings["launch_template"] = _launch_template(
            stack, labels, name, candidate, image,
            efa_subnet=shared_network.SUBNET if efa_at_launch else None)
    else:
        settings.update(ami=image.ref, root_block_device=root_volume(candidate, image))
    ignore = ["vpc_security_group_ids"]  # not reported back by every EC2-compatible API
    if placement.use_spot:
        settings["instance_market_options"] = _block(
            "aws.ec2.InstanceInstanceMarketOptionsArgs",
            market_type="spot",
            spot_options=_block("aws.ec2.InstanceInstanceMarketOptionsSpotOptionsArgs",
                                instance_interruption_behavior="terminate",
                                spot_instance_type="one-time"),
        )
        ignore.append("instance_market_options")
    if wants_placement_group(placement, candidate):
        stack.add(_resource("placement_group", "placement_group", "main", {
            "name": f"skyc-{name}", "strategy": "cluster",
            "tags": _tags(labels, f"skyc-{name}"),
        }))
        settings["placement_group"] = Ref(resource="placement_group", attribute="id")
    return settings, sorted(ignore)


def _instances(
    stack: Stack, labels: dict[str, str], request: BuildRequest, net: _Net,
    profile: Ref | None = None,
) -> list[Ref]:
    """Adds one instance per node (and its EFA interface); returns the public IPs.
    ``profile``: the instance profile the nodes carry (the jobs controller's)."""
    placement, candidate = request.placement, request.candidate
    settings, ignore = _instance_settings(stack, labels, request)
    if profile is not None:
        settings["iam_instance_profile"] = profile
    efa = uses_efa(placement, candidate)
    public_ips = []
    for rank in range(placement.num_nodes):
        node = f"node_{rank}"
        tags = _tags(labels, f"skyc-{request.name_on_cloud}-{node_name(rank)}")
        instance = {**settings, "tags": tags}
        if efa and not net.own:  # its EFA and public address come from the template
            public_ips.append(Ref(resource=node, attribute="public_ip"))
        elif efa:
            stack.add(_resource("network_interface", f"efa_{rank}", f"efa_{rank}", {
                "subnet_id": net.subnet, "security_groups": [SG_ID],
                "interface_type": "efa", "tags": tags,
            }, formerly=_counted("network_interface", "efa", rank)))
            interface = Ref(resource=f"efa_{rank}", attribute="id")
            stack.add(_resource("eip", f"eip_{rank}", node, {
                "domain": "vpc", "network_interface": interface, "tags": tags,
            }, depends_on=["internet_gateway"] if net.own else [],
                formerly=_counted("eip", "node", rank)))
            instance["network_interface"] = [_block(
                "aws.ec2.InstanceNetworkInterfaceArgs",
                device_index=0, network_interface_id=interface,
            )]
            public_ips.append(Ref(resource=f"eip_{rank}", attribute="public_ip"))
        else:
            instance.update(
                subnet_id=net.subnet,
                vpc_security_group_ids=[SG_ID],
                associate_public_ip_address=True,
            )
            public_ips.append(Ref(resource=node, attribute="public_ip"))
        stack.add(_resource(
            "instance", node, node, instance,
            depends_on=net.depends_on, ignore_changes=ignore,
            arg_names={"pulumi": {"network_interface": "network_interfaces"}},
            formerly=_counted("instance", "node", rank),
        ))
        if not placement.use_spot:
            stack.add(_resource("instance_state", f"power_{rank}", node, {
                "instance_id": Ref(resource=node, attribute="id"),
                "state": Var(name=POWER_VARIABLE),
            }))
    if not placement.use_spot:
        stack.variables[POWER_VARIABLE] = Variable(
            description="running or stopped: the nodes' power state (skyc stop / start)",
            default="running")
    return public_ips


def build(request: BuildRequest) -> Stack:
    cluster, placement, candidate = request.cluster, request.placement, request.candidate
    config = request.config
    if not placement.region:
        raise ConfigError("aws placement has no region", hint="give infra as aws/<region>")
    if not placement.instance_type:
        raise UnsupportedFeature("aws placement has no instance_type")
    labels = request.labels
    tag_rules.check(labels)
    stack = Stack(
        name=cluster, cloud="aws", region=placement.region, labels=labels,
        providers={"aws": provider(placement.region, config)},
        variables={"ssh_public_key": Variable(
            description="OpenSSH public key of the cluster's key pair (skyc generates it)")},
        backend=config.backend,
    )
    name = request.name_on_cloud
    if request.shared_network:
        net = SHARED_NETWORK
        stack.variables.update(shared_network.input_variables("VPC"))
    else:
        net = OWN_NETWORK
        _network(stack, labels, name, placement.zone)
    _firewall(stack, labels, request, uses_efa(placement, candidate), net)
    stack.add(_resource("key_pair", "key_pair", "main", {
        "key_name": f"skyc-{name}", "public_key": Var(name="ssh_public_key"),
        "tags": _tags(labels, f"skyc-{name}"),
    }))
    profile = (_controller_role(stack, labels, request) if request.jobs_controller
               else _bucket_role(stack, labels, request))
    public_ips = _instances(stack, labels, request, net, profile)
    nodes = range(placement.num_nodes)
    stack.outputs = {
        "instance_ids": Output(value=[Ref(resource=f"node_{i}", attribute="id") for i in nodes]),
        "private_ips": Output(
            value=[Ref(resource=f"node_{i}", attribute="private_ip") for i in nodes]),
        "public_ips": Output(value=public_ips),
        "ssh_user": Output(value=SSH_USER),
    }
    return stack


# The region's network, shared by its clusters (skyc.apply.networks keeps it).
network_name = network.network_name
network_stack = network.network_stack
network_inputs = network.cluster_inputs
network_values = network.network_values


def workspace_values(stack: Stack, workspace: Path) -> dict[str, Any]:
    """Creates the cluster's key pair in the workspace; its public key is the one input."""
    values: dict[str, Any] = {"ssh_public_key": ensure_key_pair(workspace)}
    if "vpc_id" in stack.variables:
        values.update(shared_network.recorded_inputs(workspace))
    if POWER_VARIABLE in stack.variables:
        power = workspace / POWER_FILE
        state = power.read_text().strip() if power.exists() else "running"
        values[POWER_VARIABLE] = "stopped" if state == "stopped" else "running"
    return values
