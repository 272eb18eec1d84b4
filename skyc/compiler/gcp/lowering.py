"""Lowering onto GCP: GPU/CPU VMs or TPU VMs in the region's shared network.

The VPC network and its subnetwork are the region's network stack's
(:mod:`skyc.compiler.gcp.network`), given as the inputs ``vpc_id`` and ``subnet_id``;
a cluster whose stack was written before networks were shared keeps its own VPC network
(no automatic subnets) and subnet in the placement's region. Resources of every
cluster: firewall rules (SSH from anywhere, the task's ``ports`` from anywhere,
all traffic between the cluster's nodes), then either ``num_nodes`` Compute
Engine VMs (see :mod:`skyc.compiler.gcp.vm`) or TPU VMs (see
:mod:`skyc.compiler.gcp.tpu`). Every name carries the owner's hash after the
cluster part (networks and firewall rules are global to a project). Every VM and
TPU VM carries the cluster's network tag (the firewall rules' target), the labels
(the cluster name, its owner and the task's ``labels``, made to fit GCP's label
rules: :mod:`skyc.compiler.gcp.names`), the cluster's service account (one per
cluster, with ``gcp.service_account_scopes``; granted no role here), the node
bootstrap as its startup script
and the cluster's SSH public key in its metadata (``ssh-keys``, from the
``ssh_keys`` input; the private key never leaves the workspace). The project is
``gcp.project`` of the config, else an input (``project``) skyc fills from the
credentials it finds.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from skyc.compiler import shared_network
from skyc.compiler.base import BuildRequest, port_range_text
from skyc.compiler.gcp import names, network, tpu, vm
from skyc.compiler.gcp.images import tpu_accelerator
from skyc.compiler.gcp.metadata import SSH_USER, metadata
from skyc.compiler.gcp.resources import block, resource
from skyc.compiler.gcp.storage import STORE, add_bucket_bindings
from skyc.compiler.keys import ensure_key_pair
from skyc.errors import ConfigError, UnsupportedFeature
from skyc.model.stack import Output, Provider, Ref, Stack, Var, Variable
from skyc.settings.config import SkycConfig

SUBNET_CIDR = "10.0.0.0/20"
NETWORK = Ref(resource="network", attribute="id")
SUBNETWORK = Ref(resource="subnetwork", attribute="id")
INTERNAL_PROTOCOLS = ("tcp", "udp", "icmp")
# GCP regions and zones: us-central1 / us-central1-a, northamerica-northeast2-b, ...
_REGION = re.compile(r"^[a-z]+-[a-z]+[0-9]+$")


def provider(region: str, zone: str | None, config: SkycConfig) -> Provider:
    settings: dict[str, Any] = {
        "project": config.gcp.project or Var(name="project"), "region": region,
    }
    if zone:
        settings["zone"] = zone
    return Provider(types={"pulumi": "gcp.Provider"}, settings=settings)


def _firewall(stack: Stack, site: vm.Site, key: str, name: str,
              allows: list[tuple[str, list[str]]], sources: dict[str, list[str]],
              description: str) -> None:
    rules = [block("compute.FirewallAllowArgs", protocol=p, **({"ports": ports} if ports else {}))
             for p, ports in allows]
    stack.add(resource("firewall", key, {
        "name": name, "network": site.network, "direction": "INGRESS", "allows": rules,
        **sources, "target_tags": [site.tag], "description": description,
    }))


def _network(stack: Stack, site: vm.Site, region: str, ports: tuple[str, ...],
             own: bool) -> None:
    """The cluster's firewall rules, and its own network where it has one (a cluster
    whose stack was written before networks were shared)."""
    cluster, tag = site.cluster, site.tag
    if own:
        stack.add(resource("network", "network", {
            "name": site.name(), "auto_create_subnetworks": False,
            "description": f"skyc cluster {cluster}",
        }))
        stack.add(resource("subnetwork", "subnetwork", {
            "name": site.name(), "network": NETWORK, "region": region,
            "ip_cidr_range": SUBNET_CIDR,
        }))
    anywhere = {"source_ranges": ["0.0.0.0/0"]}
    _firewall(stack, site, "firewall_ssh", site.name("ssh"), [("tcp", ["22"])], anywhere,
              f"skyc cluster {cluster}: SSH")
    opened = sorted({port_range_text(p) for p in ports}, key=lambda r: int(r.split("-")[0]))
    if opened:
        _firewall(stack, site, "firewall_ports", site.name("ports"), [("tcp", opened)],
                  anywhere, f"skyc cluster {cluster}: ports")
    # Between the cluster's nodes: in a shared network, from its own nodes' tag only.
    _firewall(stack, site, "firewall_internal", site.name("internal"),
              [(p, []) for p in INTERNAL_PROTOCOLS],
              {"source_ranges": [SUBNET_CIDR]} if own else {"source_tags": [tag]},
              f"skyc cluster {cluster}: between its nodes")


def _service_account(stack: Stack, request: BuildRequest) -> None:
    """The nodes' one identity: a service account of the cluster's own, granted no role
    here (what the nodes may reach is what IAM grants it, e.g. a bucket's binding)."""
    cluster = request.cluster
    stack.add(resource("service_account", "service_account", {
        "account_id": names.account_id(cluster, request.owner_hash),
        "display_name": f"skyc cluster {request.name_on_cloud}",
        "description": f"the nodes of skyc cluster {cluster}",
    }))


def build(request: BuildRequest) -> Stack:
    cluster, placement, candidate = request.cluster, request.placement, request.candidate
    if not placement.region:
        raise ConfigError("gcp placement has no region", hint="give infra as gcp/<region>")
    if not _REGION.match(placement.region):
        raise ConfigError(f"infra: {placement.region!r} is not a GCP region",
                          hint="GCP regions look like us-central1 or europe-west4")
    if not placement.zone:
        raise ConfigError("gcp placement has no zone", hint="give infra as gcp/<region>/<zone>")
    if not re.fullmatch(rf"{re.escape(placement.region)}-[a-z]", placement.zone):
        raise ConfigError(f"infra: {placement.zone!r} is not a zone of GCP region "
                          f"{placement.region}", hint=f"e.g. {placement.region}-a")
    if not placement.instance_type:
        raise UnsupportedFeature("gcp placement has no instance_type")
    config = request.config
    variables = {"ssh_keys": Variable(
        description=f"the cluster's SSH public key as GCP metadata takes it: "
        f"{SSH_USER}:<OpenSSH public key> (skyc generates it)")}
    if not config.gcp.project:
        variables["project"] = Variable(description="the GCP project (skyc finds it from the "
                                        "credentials when gcp.project is not in the config)")
    stack = Stack(
        name=cluster, cloud="gcp", region=placement.region, labels=request.labels,
        providers={"gcp": provider(placement.region, placement.zone, config)},
        variables=variables, backend=config.backend,
    )
    shared = request.shared_network
    if shared:
        stack.variables.update(shared_network.input_variables("VPC network"))
    site = vm.Site(cluster=cluster, zone=placement.zone,
                   network=shared_network.VPC if shared else NETWORK,
                   subnetwork=shared_network.SUBNET if shared else SUBNETWORK,
                   tag=names.resource_name(cluster, owner_hash=request.owner_hash),
                   labels=names.labels(request.labels),
                   metadata=metadata(cluster, bucket_tools=bool(candidate.buckets)),
                   reservations=tuple(config.gcp.reservations),
                   owner_hash=request.owner_hash,
                   # A cluster created before owners were recorded keeps its stack as
                   # it was (a new identity would stop and start its VMs): none.
                   scopes=tuple(config.gcp.service_account_scopes) if request.owner
                   else ())
    _network(stack, site, placement.region, candidate.ports, own=not shared)
    if site.scopes:
        _service_account(stack, request)
        grants = [(g.bucket, g.write) for g in candidate.buckets if g.store in (None, STORE)]
        add_bucket_bindings(stack, grants, "service_account")
    if tpu_accelerator(placement):
        stack.outputs = tpu.add_tpu_vms(stack, site, placement, candidate)
    else:
        stack.outputs = vm.add_instances(stack, site, placement, candidate)
    stack.outputs["ssh_user"] = Output(value=SSH_USER)
    return stack


def workspace_values(stack: Stack, workspace: Path) -> dict[str, Any]:
    """The cluster's SSH key (created in the workspace), the nodes' power state (from the
    workspace's file) and, if the stack asks, the project."""
    values: dict[str, Any] = {"ssh_keys": f"{SSH_USER}:{ensure_key_pair(workspace)}"}
    if vm.POWER_VARIABLE in stack.variables:
        power = workspace / vm.POWER_FILE
        state = power.read_text().strip() if power.exists() else "running"
        values[vm.POWER_VARIABLE] = vm.POWER.get(state, vm.POWER["running"])
    if "vpc_id" in stack.variables:
        values.update(shared_network.recorded_inputs(workspace))
    if "project" in stack.variables:
        values["project"] = found_project(f"cluster {stack.name}")
    return values


def found_project(what: str) -> str:
    """The project the credentials found here name, for ``what`` (a cluster, a
    network) when the config names none."""
    from skyc.compiler.gcp.credentials import PROJECT_HELP, credentials
    from skyc.settings.config import load_config

    found = credentials(os.environ, Path(os.environ.get("HOME") or Path.home()),
                        load_config())
    if found.project is None:
        raise ConfigError(f"gcp: no project to create {what} in ({found.reason})",
                          hint=PROJECT_HELP)
    return found.project


# The region's network, shared by its clusters (skyc.apply.networks keeps it).
network_name = network.network_name
network_stack = network.network_stack
network_inputs = network.cluster_inputs
network_values = network.network_values
