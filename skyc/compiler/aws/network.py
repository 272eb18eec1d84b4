"""A region's network on AWS, shared by the clusters skyc places there.

One VPC per cluster runs into the region's VPC quota (5 by default, the default VPC
included) at the fifth cluster. So skyc keeps one network per region in a stack of its
own, ``network-aws-<region>``: the VPC, its internet gateway, a route table with the
default route, and a subnet (associated with that table) in each zone a cluster has
used. Each cluster's stack holds only its own parts (security group, key pair, nodes)
and takes the VPC's and its zone's subnet's ids as inputs
(:mod:`skyc.compiler.shared_network`).

A subnet's range comes from its zone's place in the network's zones, in the order
clusters first used them (the state keeps that order): the n-th zone's subnet is
``10.0.<16 n>.0/20``, so a zone added later never moves another zone's subnet. Nodes of
different clusters share the VPC, not their security groups: a cluster's nodes accept
traffic from their own group, not from the VPC's range.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from skyc.compiler.aws.resources import resource
from skyc.errors import ConfigError
from skyc.model.stack import Output, Ref, Resource, Stack
from skyc.settings.config import SkycConfig

VPC_CIDR = "10.0.0.0/16"
NETWORK_LABEL = "skyc-network"
ANY_ZONE = "any"  # the subnet of a placement with no zone (EC2 picks one)
MAX_ZONES = 16    # /20 subnets in the VPC's /16



def network_name(region: str) -> str:
    """The stack (and state record) name of ``region``'s network."""
    return f"network-aws-{region}"


def zone_key(zone: str | None) -> str:
    """The zone's part of resource and output names (``use1-az1`` -> ``use1_az1``)."""
    return (zone or ANY_ZONE).replace("-", "_")


def subnet_cidr(index: int) -> str:
    """The subnet of the network's ``index``-th zone."""
    return f"10.0.{16 * index}.0/20"


def _resource(kind: str, key: str, properties: dict[str, Any], **fields: Any) -> Resource:
    return resource(kind, key, key, properties, **fields)


def network_stack(region: str, zones: list[str | None], owner: str,
                  config: SkycConfig) -> Stack:
    """The network of ``region`` with a subnet in each of ``zones``, in the order they
    were first used (None: a subnet where EC2 chooses)."""
    if len(zones) > MAX_ZONES or len(set(zones)) != len(zones):
        raise ConfigError(f"network {network_name(region)}: {len(zones)} zones given, at "
                          f"most {MAX_ZONES} different ones fit its VPC")
    from skyc.compiler.aws.lowering import provider
    from skyc.model.owner import OWNER_LABEL, owner_hash

    labels = {NETWORK_LABEL: f"aws-{region}", OWNER_LABEL: owner}
    name = f"skyc-net-{region}-{owner_hash(owner)}"
    tags = {**labels, "Name": name}
    stack = Stack(name=network_name(region), cloud="aws", region=region, labels=labels,
                  providers={"aws": provider(region, config)}, backend=config.backend)
    vpc, table = Ref(resource="vpc", attribute="id"), Ref(resource="route_table",
                                                          attribute="id")
    stack.add(_resource("vpc", "vpc", {
        "cidr_block": VPC_CIDR, "enable_dns_hostnames": True, "enable_dns_support": True,
        "tags": tags}))
    stack.add(_resource("internet_gateway", "internet_gateway", {"vpc_id": vpc, "tags": tags}))
    stack.add(_resource("route_table", "route_table", {"vpc_id": vpc, "tags": tags}))
    stack.add(_resource("route", "route", {
        "route_table_id": table, "destination_cidr_block": "0.0.0.0/0",
        "gateway_id": Ref(resource="internet_gateway", attribute="id")}))
    outputs = {"vpc_id": Output(value=vpc)}
    for index, zone in enumerate(zones):
        key = zone_key(zone)
        subnet: dict[str, Any] = {
            "vpc_id": vpc, "cidr_block": subnet_cidr(index), "map_public_ip_on_launch": True,
            "tags": {**tags, "Name": f"{name}-{zone or ANY_ZONE}"}}
        if zone:
            subnet["availability_zone_id"] = zone
        stack.add(_resource("subnet", f"subnet_{key}", subnet))
        # A cluster's nodes reach the internet once their subnet routes there: the
        # association and the route are made before the subnet's id is given out.
        stack.add(_resource("route_table_association", f"route_{key}", {
            "subnet_id": Ref(resource=f"subnet_{key}", attribute="id"),
            "route_table_id": table}, depends_on=["route"]))
        outputs[f"subnet_{key}"] = Output(value=Ref(resource=f"route_{key}",
                                                    attribute="subnet_id"))
    stack.outputs = outputs
    return stack


def cluster_inputs(outputs: dict[str, Any], zone: str | None) -> dict[str, str]:
    """A cluster's network inputs in ``zone``, from its network stack's outputs."""
    return {"vpc_id": str(outputs["vpc_id"]),
            "subnet_id": str(outputs[f"subnet_{zone_key(zone)}"])}


def network_values(stack: Stack, workspace: Path) -> dict[str, Any]:
    """The network stack's input values: it has none."""
    return {}
