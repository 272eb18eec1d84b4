"""A region's network on GCP, shared by the clusters skyc places there.

A VPC network per cluster runs into the project's network quota; so, as on AWS
(:mod:`skyc.compiler.aws.network`), skyc keeps one network per region in a stack of its
own, ``network-gcp-<region>``: a VPC network (no automatic subnets) and one subnetwork
in the region (``10.0.0.0/16``: subnetworks are regional, so every zone's nodes share
it). Each cluster's stack keeps its firewall rules (SSH, its ports, and traffic from its
own nodes: the rules target the cluster's network tag, and the internal one takes only
that tag as its source) and takes the network's and subnetwork's ids as inputs
(:mod:`skyc.compiler.shared_network`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from skyc.compiler.gcp import names
from skyc.compiler.gcp.resources import resource
from skyc.model.stack import Output, Ref, Stack, Variable
from skyc.settings.config import SkycConfig

SUBNET_CIDR = "10.0.0.0/16"
NETWORK_LABEL = "skyc-network"


def network_name(region: str) -> str:
    """The stack (and state record) name of ``region``'s network."""
    return f"network-gcp-{region}"


def network_stack(region: str, zones: list[str | None], owner: str,
                  config: SkycConfig) -> Stack:
    """The network of ``region`` (its subnetwork serves every zone in ``zones``)."""
    from skyc.compiler.gcp.lowering import provider
    from skyc.model.owner import OWNER_LABEL, owner_hash

    labels = {NETWORK_LABEL: f"gcp-{region}", OWNER_LABEL: owner}
    name = names.resource_name(f"net-{region}", owner_hash=owner_hash(owner))
    variables = {} if config.gcp.project else {"project": Variable(
        description="the GCP project (skyc finds it from the credentials when "
        "gcp.project is not in the config)")}
    stack = Stack(name=network_name(region), cloud="gcp", region=region, labels=labels,
                  providers={"gcp": provider(region, None, config)}, variables=variables,
                  backend=config.backend)
    network = Ref(resource="network", attribute="id")
    stack.add(resource("network", "network", {
        "name": name, "auto_create_subnetworks": False,
        "description": f"skyc: the clusters in {region} (owner {owner})"}))
    stack.add(resource("subnetwork", "subnetwork", {
        "name": name, "network": network, "region": region, "ip_cidr_range": SUBNET_CIDR}))
    stack.outputs = {"vpc_id": Output(value=network),
                     "subnet_id": Output(value=Ref(resource="subnetwork", attribute="id"))}
    return stack


def cluster_inputs(outputs: dict[str, Any], zone: str | None) -> dict[str, str]:
    """A cluster's network inputs (any zone of the region: the subnetwork is regional)."""
    return {"vpc_id": str(outputs["vpc_id"]), "subnet_id": str(outputs["subnet_id"])}


def network_values(stack: Stack, workspace: Path) -> dict[str, Any]:
    """The network stack's input values: the project, when the config names none."""
    if "project" not in stack.variables:
        return {}
    from skyc.compiler.gcp.lowering import found_project

    return {"project": found_project(f"network {stack.name}")}
