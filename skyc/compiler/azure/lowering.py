"""Lowering onto Azure (Pulumi azure-native): one resource group per cluster.

Resources, all in the placement's region: the resource group (named
``skyc-<cluster>-<owner hash>``, unique in the subscription: see :func:`base_name`;
every resource is tagged with the cluster and its owner), a virtual network
with one subnet, a network security group on the subnet (SSH, the task's
``ports``, all traffic from inside the virtual network), and per node a Standard
public IP, a NIC (accelerated networking where the size supports it, see
``data/azure_sizes.csv``; a static private address, so the stack's outputs name
it) and the VM. A task that mounts containers skyc created adds a managed identity on
the VMs with a role on each of those containers (``storage``).

VMs: the placement's size; the admin user ``azureuser`` with the cluster's SSH
public key (an RSA key, the kind Azure documents; the ``ssh_public_key`` input,
never in the program) and password login disabled; an OS disk of ``disk_size``
GiB, never less than the image (Premium SSD for ``disk_tier`` high/best,
Standard SSD for medium, the default, Standard HDD for low); the image per
accelerator vendor (``images``) or the task's ``image_id``, with its security
type written out, and the VM extension that installs its driver where
the image needs one (the GRID driver of the A10 sizes); custom data from the
node-bootstrap template every cloud uses; the zone when the placement names one.

Spot: priority Spot, max price -1 (pay up to the on-demand price, so Azure
evicts only for capacity) and eviction policy Delete. skyc recovers from an
eviction by launching the cluster again (failover re-targets the same stack),
never by restarting a deallocated VM: with Deallocate an evicted VM keeps its
disk billing and its cores counting against the regional spot quota while it
waits for capacity that may not come back, and a restart is not a relaunch
elsewhere. Delete is also what SkyPilot asks for on Azure.

InfiniBand sizes (ND A100 v4, ND H100/H200 v5, ND MI300X v5, HB/HC/HX) in a
multi-node ``network_tier: best`` cluster join one availability set (aligned,
one fault domain). Azure shares an InfiniBand fabric only among the VMs of one
availability set or one scale set; a proximity placement group co-locates VMs
but does not put them on one fabric. A scale set would replace the per-node VMs
(and their per-node outputs) with one resource whose instances Azure names, so
the availability set keeps one VM per node, like every other target. Azure
refuses spot VMs and zones in an availability set: those combinations are
refused here, naming the fields.
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import re
from pathlib import Path
from typing import Any

from skyc.compiler.azure import images, sizes, storage
from skyc.compiler.base import BuildRequest, node_name, port_range_text
from skyc.compiler.keys import RSA, ensure_key_pair
from skyc.compiler.templates import render
from skyc.errors import ConfigError, UnsupportedFeature
from skyc.model.plan import Placement
from skyc.model.stack import Block, Output, Provider, Ref, Resource, Stack, Var, Variable
from skyc.settings.config import SkycConfig
from skyc.task.candidate import ResourceCandidate

SSH_USER = "azureuser"
KEY_ALGORITHM = RSA  # Azure documents RSA keys for Linux VMs (ed25519: preview)
PROVIDER_VERSION = ">= 3.0, < 4.0"
VNET_CIDR = "10.0.0.0/16"
SUBNET_CIDR = "10.0.0.0/20"
FIRST_HOST = 4  # Azure reserves the first four addresses of every subnet
MAX_BASE_NAME = 40  # skyc-<cluster>, shortened; "-worker199" must still fit 64
MAX_DISK_GIB = 4095  # the largest OS disk Azure takes

# OS disk storage per disk tier (Ultra and Premium v2 disks cannot be OS disks).
DISK_TIERS = {
    "low": "Standard_LRS",
    "medium": "StandardSSD_LRS",
    "high": "Premium_LRS",
    "ultra": "Premium_LRS",
    "best": "Premium_LRS",
}
DEFAULT_DISK_TIER = "medium"

# NSG rule priorities (100-4096, lower first): SSH, then the task's ports, then
# the cluster's own traffic.
SSH_PRIORITY = 100
PORTS_PRIORITY = 110
CLUSTER_PRIORITY = 4000

# Resource kinds -> Pulumi azure-native classes (Azure-native is Pulumi's own
# provider, not bridged from Terraform: the stack has no Terraform types).
TYPES: dict[str, str] = {
    "resource_group": "azure_native.resources.ResourceGroup",
    "virtual_network": "azure_native.network.VirtualNetwork",
    "subnet": "azure_native.network.Subnet",
    "security_group": "azure_native.network.NetworkSecurityGroup",
    "public_ip": "azure_native.network.PublicIPAddress",
    "nic": "azure_native.network.NetworkInterface",
    "availability_set": "azure_native.compute.AvailabilitySet",
    "vm": "azure_native.compute.VirtualMachine",
    "vm_extension": "azure_native.compute.VirtualMachineExtension",
}

_REGION = re.compile(r"^[a-z][a-z0-9]*$")
_ZONE = re.compile(r"^(?:[a-z][a-z0-9]*-)?([1-9])$")
# Size names: family letters, vCPUs, an optional constrained count, feature letters.
_SIZE = re.compile(r"^Standard_([A-Z]+)(\d+)(?:-\d+)?([a-z]*)")

_BAD_TAG = re.compile(r"[<>%&\\?/]")
MAX_TAG_NAME, MAX_TAG_VALUE = 512, 256

RG = Ref(resource="resource_group", attribute="name")


def _resource(kind: str, key: str, properties: dict[str, Any], **fields: Any) -> Resource:
    return Resource(key=key, types={"pulumi": TYPES[kind]}, properties=properties,
                    provider="azure_native", **fields)


def _args(cls: str, **values: Any) -> Block:
    """A nested block built with the azure-native SDK's typed ``*Args`` class ``cls``."""
    return Block(values=values, args={"pulumi": f"azure_native.{cls}"})


def _sub(ref: Ref, cls: str = "compute.SubResourceArgs") -> Block:
    return _args(cls, id=ref)


def provider(region: str, config: SkycConfig) -> Provider:
    settings: dict[str, Any] = {"location": region}
    if config.azure.subscription_id:
        settings["subscription_id"] = config.azure.subscription_id
    return Provider(types={"pulumi": "azure_native.Provider"}, settings=settings,
                    source="pulumi/azure-native", version=PROVIDER_VERSION)


def zone_of(placement: Placement) -> str | None:
    """The placement's availability zone as Azure names it (``1``, ``2``, ``3``)."""
    if not placement.zone:
        return None
    match = _ZONE.match(placement.zone.strip())
    if not match:
        raise ConfigError(f"infra: {placement.zone!r} is not an Azure availability zone",
                          hint="zones are 1, 2 or 3, e.g. infra: azure/eastus2/1")
    return match.group(1)


def premium_storage(size: str) -> bool:
    """Whether the size takes Premium SSDs: an ``s`` among its feature letters
    (``D4s_v5``, ``NC4as_T4_v3``) or an S-family name (``DS3_v2``, ``GS4``)."""
    match = _SIZE.match(size)
    return bool(match and ("s" in match.group(3) or match.group(1).endswith("S")))


def os_disk(placement: Placement, candidate: ResourceCandidate, image: images.Image) -> Block:
    tier = candidate.disk_tier or DEFAULT_DISK_TIER
    if tier not in DISK_TIERS:
        raise ConfigError(f"disk_tier: {tier!r} is not one of {', '.join(DISK_TIERS)}")
    if candidate.disk_size < image.disk_gib:
        what = f"the image {image.urn}" if image.from_table else "an Azure OS disk can be"
        raise ConfigError(
            f"disk_size: {candidate.disk_size} GiB is smaller than {what} "
            f"({image.disk_gib} GiB)", hint=f"set disk_size: {image.disk_gib} or more")
    if candidate.disk_size > MAX_DISK_GIB:
        raise ConfigError(f"disk_size: {candidate.disk_size} GiB is more than the "
                          f"{MAX_DISK_GIB} GiB an Azure OS disk can be")
    storage = DISK_TIERS[tier]
    size = placement.instance_type or ""
    if storage.startswith("Premium") and not premium_storage(size):
        raise ConfigError(
            f"disk_tier: {tier} needs Premium SSD, which {size} does not take",
            hint="use disk_tier: medium, or a size with an 's' in its name (e.g. D4s_v5)")
    managed: dict[str, Any] = {"storage_account_type": storage}
    if image.security_type == "ConfidentialVM":
        managed["security_profile"] = _args("compute.VMDiskSecurityProfileArgs",
                                            security_encryption_type="VMGuestStateOnly")
    return _args("compute.OSDiskArgs", create_option="FromImage", caching="ReadWrite",
                 delete_option="Delete", disk_size_gb=candidate.disk_size,
                 managed_disk=_args("compute.ManagedDiskParametersArgs", **managed))


def image_reference(image: images.Image) -> Block:
    if image.kind == "marketplace":
        return _args("compute.ImageReferenceArgs", publisher=image.publisher,
                     offer=image.offer, sku=image.sku, version=image.version)
    rid = image.resource_id or ""
    if rid.lower().startswith("/communitygalleries/"):
        return _args("compute.ImageReferenceArgs", community_gallery_image_id=rid)
    if rid.lower().startswith("/sharedgalleries/"):
        return _args("compute.ImageReferenceArgs", shared_gallery_image_id=rid)
    return _args("compute.ImageReferenceArgs", id=rid)


def security_profile(image: images.Image) -> Block | None:
    """The image's security type, always written out: Trusted Launch and confidential
    VMs with Secure Boot and vTPM; Standard for the images that need it (the HPC
    images, unsigned driver modules), since Azure may pick Trusted Launch for a VM
    that names none. None for a user's image (Azure decides)."""
    if image.security_type in ("TrustedLaunch", "ConfidentialVM"):
        return _args("compute.SecurityProfileArgs", security_type=image.security_type,
                     uefi_settings=_args("compute.UefiSettingsArgs",
                                         secure_boot_enabled=True, v_tpm_enabled=True))
    if image.security_type == "Standard":
        return _args("compute.SecurityProfileArgs", security_type="Standard")
    return None


def _rule(name: str, priority: int, protocol: str, source: str, ports: str) -> Block:
    return _args("network.SecurityRuleArgs", name=name, priority=priority,
                 direction="Inbound", access="Allow", protocol=protocol,
                 source_address_prefix=source, source_port_range="*",
                 destination_address_prefix="*", destination_port_range=ports)


def security_rules(ports: tuple[str, ...]) -> list[Block]:
    rules = [_rule("ssh", SSH_PRIORITY, "Tcp", "*", "22")]
    ranges = sorted({port_range_text(p) for p in ports} - {"22"},
                    key=lambda r: tuple(int(x) for x in r.split("-")))
    if len(ranges) > CLUSTER_PRIORITY - PORTS_PRIORITY:
        raise ConfigError(f"ports: {len(ranges)} port ranges are more than one network "
                          "security group holds", hint="merge them into ranges")
    for offset, ports_ in enumerate(ranges):
        rules.append(_rule(f"tcp-{ports_}", PORTS_PRIORITY + offset, "Tcp", "*", ports_))
    rules.append(_rule("cluster", CLUSTER_PRIORITY, "*", VNET_CIDR, "*"))
    return rules


def base_name(cluster: str, owner_hash: str = "") -> str:
    """``skyc-<cluster>[-<owner hash>]`` as Azure names take it: no underscores (VM and
    host names refuse them), at most 40 characters (a short hash of the cluster name
    keeps a shortened one unique; the owner's hash is always kept), so
    ``-worker<rank>`` still fits a VM's 64. It names the resource group, which is
    unique in a subscription."""
    tail = f"-{owner_hash}" if owner_hash else ""
    name = f"skyc-{cluster.replace('_', '-')}"
    if len(name) + len(tail) > MAX_BASE_NAME or "_" in cluster:
        digest = hashlib.sha256(cluster.encode()).hexdigest()[:8]
        name = f"{name[:MAX_BASE_NAME - 9 - len(tail)].rstrip('-')}-{digest}"
    return name + tail


def vm_name(cluster: str, rank: int, owner_hash: str = "") -> str:
    """The node's VM, NIC, public IP and host name."""
    return f"{base_name(cluster, owner_hash)}-{node_name(rank)}"


def private_ip(rank: int) -> str:
    return str(ipaddress.ip_network(SUBNET_CIDR)[FIRST_HOST + rank])


def uses_availability_set(placement: Placement, candidate: ResourceCandidate) -> bool:
    return (placement.num_nodes > 1 and candidate.network_tier == "best"
            and sizes.is_infiniband(placement.instance_type or ""))


def _check(placement: Placement, candidate: ResourceCandidate) -> None:
    if not placement.region:
        raise ConfigError("azure placement has no region", hint="give infra as azure/<region>")
    if not _REGION.match(placement.region):
        raise ConfigError(f"infra: {placement.region!r} is not an Azure region",
                          hint="Azure regions are names such as eastus2 or westeurope")
    if not placement.instance_type:
        raise UnsupportedFeature("azure placement has no instance_type")
    for key, value in candidate.labels.items():
        if _BAD_TAG.search(key) or len(key) > MAX_TAG_NAME or len(str(value)) > MAX_TAG_VALUE:
            raise ConfigError(
                f"labels.{key}: not an Azure tag (names have no < > % & \\ ? /, at most "
                f"{MAX_TAG_NAME} characters; values at most {MAX_TAG_VALUE})")
    if uses_availability_set(placement, candidate):
        if placement.use_spot:
            raise UnsupportedFeature(
                "use_spot: Azure spot VMs cannot share an InfiniBand fabric (an availability "
                "set takes no spot VMs)", hint="set use_spot: false, or network_tier: standard")
        if placement.zone:
            raise UnsupportedFeature(
                "infra: a zone cannot be given with network_tier: best on InfiniBand sizes "
                "(Azure places an availability set's VMs itself)",
                hint="give infra as azure/<region>")


def _network(stack: Stack, tags: dict[str, str], base: str, region: str,
             ports: tuple[str, ...]) -> None:
    stack.add(_resource("resource_group", "resource_group", {
        "resource_group_name": base, "location": region, "tags": tags}))
    stack.add(_resource("security_group", "security_group", {
        "resource_group_name": RG, "network_security_group_name": base,
        "location": region, "security_rules": security_rules(ports), "tags": tags}))
    stack.add(_resource("virtual_network", "virtual_network", {
        "resource_group_name": RG, "virtual_network_name": base,
        "location": region,
        "address_space": _args("network.AddressSpaceArgs", address_prefixes=[VNET_CIDR]),
        "tags": tags}, ignore_changes=["subnets"]))
    stack.add(_resource("subnet", "subnet", {
        "resource_group_name": RG,
        "virtual_network_name": Ref(resource="virtual_network", attribute="name"),
        "subnet_name": "main", "address_prefix": SUBNET_CIDR,
        "network_security_group": _args("network.NetworkSecurityGroupArgs",
                                        id=Ref(resource="security_group", attribute="id")),
    }))


def _vm_settings(request: BuildRequest, image: images.Image) -> dict[str, Any]:
    """The VM arguments every node shares."""
    placement, candidate = request.placement, request.candidate
    bootstrap = render("node_bootstrap.sh.j2", cluster=request.cluster, ssh_user=SSH_USER,
                       bucket_tools=bool(candidate.buckets))
    settings: dict[str, Any] = {
        "resource_group_name": RG,
        "location": placement.region,
        "hardware_profile": _args("compute.HardwareProfileArgs",
                                  vm_size=placement.instance_type),
        "storage_profile": _args("compute.StorageProfileArgs",
                                 image_reference=image_reference(image),
                                 os_disk=os_disk(placement, candidate, image)),
        "custom_data": base64.b64encode(bootstrap.encode()).decode(),
    }
    profile = security_profile(image)
    if profile is not None:
        settings["security_profile"] = profile
    if placement.use_spot:
        settings.update(priority="Spot", eviction_policy="Delete",
                        billing_profile=_args("compute.BillingProfileArgs", max_price=-1))
    zone = zone_of(placement)
    if zone:
        settings["zones"] = [zone]
    return settings


def _os_profile(computer_name: str, custom_data: str) -> Block:
    key = _args("compute.SshPublicKeyArgs", path=f"/home/{SSH_USER}/.ssh/authorized_keys",
                key_data=Var(name="ssh_public_key"))
    linux = _args("compute.LinuxConfigurationArgs", disable_password_authentication=True,
                  provision_vm_agent=True,
                  ssh=_args("compute.SshConfigurationArgs", public_keys=[key]))
    return _args("compute.OSProfileArgs", computer_name=computer_name,
                 admin_username=SSH_USER, custom_data=custom_data,
                 linux_configuration=linux)


def _driver_extension(stack: Stack, extension: images.Extension, vm: str, rank: int,
                      region: str, tags: dict[str, str]) -> None:
    """The VM extension that installs the image's driver on node ``rank`` (VM ``vm``;
    the apply waits for it, so the node is ready with its driver)."""
    stack.add(_resource("vm_extension", f"driver_{rank}", {
        "resource_group_name": RG, "vm_name": vm,
        "vm_extension_name": extension.type, "location": region,
        "publisher": extension.publisher, "type": extension.type,
        "type_handler_version": extension.version, "auto_upgrade_minor_version": True,
        "tags": tags,
    }, depends_on=[f"node_{rank}"]))


def _subscription(config: SkycConfig) -> str:
    """The subscription a role assignment's ids are in: the config's, else the login's."""
    if config.azure.subscription_id:
        return config.azure.subscription_id
    from skyc.compiler.azure.credentials import find

    found = find(config.azure)
    if found.subscription_id is None:
        raise ConfigError(
            "azure.subscription_id: the task mounts containers skyc created, and the "
            "role assignments that let the cluster's identity reach them name the "
            f"subscription, which is not known here ({found.reason})",
            hint="set azure.subscription_id in the config (or AZURE_SUBSCRIPTION_ID), "
            "or log in with `az login`")
    return found.subscription_id


def _container_access(stack: Stack, request: BuildRequest, tags: dict[str, str]
                      ) -> Ref | None:
    """The cluster's managed identity and its roles on the containers skyc created that
    the task mounts (None: the task mounts none)."""
    grants = [(g.bucket, g.write) for g in request.candidate.buckets
              if g.created and g.store in (None, storage.STORE)]
    if not grants:
        return None
    return storage.add_container_access(
        stack, grants, _subscription(request.config), "identity", RG,
        base_name(request.cluster, request.owner_hash), request.placement.region or "",
        tags)


def _nodes(stack: Stack, request: BuildRequest, tags: dict[str, str],
           identity: Ref | None) -> None:
    placement, candidate, cluster = request.placement, request.candidate, request.cluster
    size = placement.instance_type or ""
    image = images.choose_image(placement, candidate)
    shared = _vm_settings(request, image)
    if identity is not None:
        shared["identity"] = _args("compute.VirtualMachineIdentityArgs",
                                   type="UserAssigned", user_assigned_identities=[identity])
    custom_data = shared.pop("custom_data")
    if uses_availability_set(placement, candidate):
        stack.add(_resource("availability_set", "availability_set", {
            "resource_group_name": RG,
            "availability_set_name": base_name(cluster, request.owner_hash),
            "location": placement.region, "platform_fault_domain_count": 1,
            "platform_update_domain_count": 1,
            "sku": _args("compute.SkuArgs", name="Aligned"), "tags": tags}))
        shared["availability_set"] = _sub(Ref(resource="availability_set", attribute="id"))
    for rank in range(placement.num_nodes):
        name = vm_name(cluster, rank, request.owner_hash)
        node_tags = {**tags, "skyc-node": node_name(rank)}
        public: dict[str, Any] = {
            "resource_group_name": RG, "public_ip_address_name": name,
            "location": placement.region, "public_ip_allocation_method": "Static",
            "sku": _args("network.PublicIPAddressSkuArgs", name="Standard"),
            "tags": node_tags}
        stack.add(_resource("public_ip", f"public_ip_{rank}", public))
        stack.add(_resource("nic", f"nic_{rank}", {
            "resource_group_name": RG, "network_interface_name": name,
            "location": placement.region,
            "enable_accelerated_networking": sizes.accelerated_networking(size),
            "ip_configurations": [_args(
                "network.NetworkInterfaceIPConfigurationArgs", name="primary", primary=True,
                subnet=_sub(Ref(resource="subnet", attribute="id"), "network.SubnetArgs"),
                private_ip_allocation_method="Static", private_ip_address=private_ip(rank),
                public_ip_address=_sub(Ref(resource=f"public_ip_{rank}", attribute="id"),
                                       "network.PublicIPAddressArgs"),
            )],
            "tags": node_tags}))
        stack.add(_resource("vm", f"node_{rank}", {
            **shared, "vm_name": name,
            "os_profile": _os_profile(name, custom_data),
            "network_profile": _args("compute.NetworkProfileArgs", network_interfaces=[
                _args("compute.NetworkInterfaceReferenceArgs", primary=True,
                      delete_option="Delete",
                      id=Ref(resource=f"nic_{rank}", attribute="id"))]),
            "tags": node_tags,
        }))
        if image.extension is not None:
            _driver_extension(stack, image.extension, name, rank, placement.region or "",
                              node_tags)


def build(request: BuildRequest) -> Stack:
    placement, candidate, cluster = request.placement, request.candidate, request.cluster
    _check(placement, candidate)
    region = placement.region or ""
    tags = request.labels
    stack = Stack(
        name=cluster, cloud="azure", region=region, labels=tags,
        providers={"azure_native": provider(region, request.config)},
        variables={"ssh_public_key": Variable(
            description="OpenSSH public key of the cluster's admin user (skyc generates it)")},
        backend=request.config.backend,
    )
    _network(stack, tags, base_name(cluster, request.owner_hash), region, candidate.ports)
    _nodes(stack, request, tags, _container_access(stack, request, tags))
    nodes = range(placement.num_nodes)
    stack.outputs = {
        "names": Output(value=[vm_name(cluster, i, request.owner_hash) for i in nodes]),
        "private_ips": Output(value=[private_ip(i) for i in nodes]),
        "public_ips": Output(
            value=[Ref(resource=f"public_ip_{i}", attribute="ip_address") for i in nodes]),
        "ssh_user": Output(value=SSH_USER),
    }
    return stack


def workspace_values(stack: Stack, workspace: Path) -> dict[str, Any]:
    """Creates the cluster's key pair in the workspace; its public key is the one input.
    An RSA pair: the key Azure's API documents for Linux VMs (its ed25519 support is
    a preview)."""
    return {"ssh_public_key": ensure_key_pair(workspace, KEY_ALGORITHM)}
