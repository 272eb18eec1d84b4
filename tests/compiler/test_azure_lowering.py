"""The Azure golden programs run under Pulumi's mock runtime, and what they register.

No Azure account or Pulumi CLI exists here: each golden case's generated program
runs under ``pulumi.runtime.set_mocks`` with the real azure-native SDK classes (so
a misspelt argument or ``*Args`` key fails), and the recorded resource inputs are
checked: the size, the image per accelerator vendor, spot priority and eviction,
NSG rules, zones, tags, SSH-key-only login and the InfiniBand placement.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from skyc.compiler import build_stack, choose_engine, nodes_from_outputs, workspace_values
from skyc.errors import ConfigError, EngineError, UnsupportedFeature
from skyc.model.owner import owner_hash
from skyc.model.plan import Placement
from skyc.settings.config import SkycConfig
from skyc.stacks.pulumi_preview import RecordedResource, run_program
from skyc.stacks.pulumi_python import program
from skyc.task.candidate import ResourceCandidate
from tests.compiler.golden import OWNER, ROOT, compile_case

CASES = ROOT / "azure"
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGolden skyc-test"
VM = "azure-native:compute:VirtualMachine"
OWNED = owner_hash(OWNER)  # the golden cases' owner's hash, in every name
EXTENSION = "azure-native:compute:VirtualMachineExtension"
HPC = ("microsoft-dsvm", "ubuntu-hpc", "2204")
ROCM = ("microsoft-dsvm", "ubuntu-hpc", "2204-rocm")
UBUNTU = ("Canonical", "0001-com-ubuntu-server-jammy", "22_04-lts-gen2")


def _run(case: str, tmp_path: Path) -> list[RecordedResource]:
    stack = compile_case(CASES / case, tmp_path)
    return run_program(program(stack), stack=stack.name, config={"ssh_public_key": KEY})


def _of(recorded: list[RecordedResource], type_token: str) -> list[dict[str, Any]]:
    """The inputs of every resource of one type, by name (registration order varies)."""
    return [r.inputs for r in sorted(recorded, key=lambda r: r.name) if r.type == type_token]


def _image(vm: dict[str, Any]) -> tuple[str, str, str]:
    ref = vm["storageProfile"]["imageReference"]
    return ref["publisher"], ref["offer"], ref["sku"]


def _common(recorded: list[RecordedResource], cluster: str, size: str, nodes: int) -> None:
    vms = _of(recorded, VM)
    assert len(vms) == nodes
    for rank, vm in enumerate(vms):
        assert vm["hardwareProfile"] == {"vmSize": size}
        linux = vm["osProfile"]["linuxConfiguration"]
        assert linux["disablePasswordAuthentication"] is True
        assert "adminPassword" not in vm["osProfile"]
        assert linux["ssh"]["publicKeys"] == [
            {"keyData": KEY, "path": "/home/azureuser/.ssh/authorized_keys"}]
        assert vm["osProfile"]["adminUsername"] == "azureuser"
        bootstrap = base64.b64decode(vm["osProfile"]["customData"]).decode()
        assert bootstrap.startswith("#!/bin/bash") and f"cluster {cluster}" in bootstrap
        assert vm["tags"]["skyc-cluster"] == cluster
        assert vm["tags"]["skyc-node"] == ("head" if rank == 0 else f"worker{rank}")
    (group,) = _of(recorded, "azure-native:resources:ResourceGroup")
    assert group["resourceGroupName"] == f"skyc-{cluster}-{OWNED}"
    for res in recorded:
        if res.type.startswith("azure-native:") and res.type != "azure-native:network:Subnet":
            assert res.inputs["tags"]["skyc-cluster"] == cluster, res.type
            assert res.inputs["tags"]["skyc-owner"] == OWNER, res.type
    nics = _of(recorded, "azure-native:network:NetworkInterface")
    assert [n["ipConfigurations"][0]["privateIPAddress"] for n in nics] == [
        f"10.0.0.{4 + i}" for i in range(nodes)]
    assert len(_of(recorded, "azure-native:network:PublicIPAddress")) == nodes


def _rules(recorded: list[RecordedResource]) -> dict[str, dict[str, Any]]:
    (nsg,) = _of(recorded, "azure-native:network:NetworkSecurityGroup")
    return {r["name"]: r for r in nsg["securityRules"]}


def test_mi300x_8_boots_rocm_on_premium_ssd(tmp_path: Path) -> None:
    recorded = _run("mi300x_8", tmp_path)
    _common(recorded, "mi300x-8", "Standard_ND96isr_MI300X_v5", 1)
    (vm,) = _of(recorded, VM)
    assert _image(vm) == ROCM
    # The HPC images are not Trusted Launch images: Standard, written out, since Azure
    # may pick Trusted Launch for a VM that names no security type.
    assert vm["securityProfile"] == {"securityType": "Standard"}
    assert not _of(recorded, EXTENSION)  # the image carries its driver
    disk = vm["storageProfile"]["osDisk"]
    assert disk["managedDisk"] == {"storageAccountType": "Premium_LRS"}
    assert disk["diskSizeGB"] == 1024 and disk["createOption"] == "FromImage"
    assert "priority" not in vm and "zones" not in vm
    assert vm["tags"]["team"] == "rocm"
    (nic,) = _of(recorded, "azure-native:network:NetworkInterface")
    assert nic["enableAcceleratedNetworking"] is True
    # one node: no availability set, whatever the size's fabric
    assert not _of(recorded, "azure-native:compute:AvailabilitySet")


@pytest.mark.parametrize(("case", "size", "zones"), [
    ("a100_80gb_8", "Standard_ND96amsr_A100_v4", None),
    ("h100_8", "Standard_ND96isr_H100_v5", ["1"]),
])
def test_nvidia_nd_sizes_boot_the_hpc_image(tmp_path: Path, case: str, size: str,
                                             zones: list[str] | None) -> None:
    recorded = _run(case, tmp_path)
    _common(recorded, case.replace("_", "-"), size, 1)
    (vm,) = _of(recorded, VM)
    assert _image(vm) == HPC
    assert vm.get("zones") == zones


def test_a10_boots_ubuntu_with_the_grid_driver_extension(tmp_path: Path) -> None:
    """NVadsA10 v5 takes NVIDIA's GRID driver only: Ubuntu (Standard security type, no
    Secure Boot for the driver's unsigned modules) and Azure's NVIDIA GPU Driver
    Extension on the VM, not the HPC image's data center driver."""
    recorded = _run("a10_grid", tmp_path)
    _common(recorded, "a10-grid", "Standard_NV36ads_A10_v5", 1)
    (vm,) = _of(recorded, VM)
    assert _image(vm) == UBUNTU and _image(vm) != HPC
    assert vm["securityProfile"] == {"securityType": "Standard"}
    (extension,) = _of(recorded, EXTENSION)
    assert (extension["publisher"], extension["type"], extension["typeHandlerVersion"]) == (
        "Microsoft.HpcCompute", "NvidiaGpuDriverLinux", "1.6")
    assert extension["vmName"] == f"skyc-a10-grid-{OWNED}-head"  # the VM's name, resolved
    assert extension["resourceGroupName"] == vm["resourceGroupName"]  # the same group
    assert extension["autoUpgradeMinorVersion"] is True
    assert extension["tags"]["skyc-cluster"] == "a10-grid"


def test_the_key_is_rsa(tmp_path: Path) -> None:
    """Azure documents RSA keys for Linux VMs (ed25519 is a preview): the cluster's key
    pair for Azure is RSA, and its nodes are reached with it."""
    stack = compile_case(CASES / "t4_1", tmp_path)
    key = workspace_values(stack, tmp_path / "ws")["ssh_public_key"]
    assert key.startswith("ssh-rsa ") and len(key) > 500   # 3072 bits
    assert (tmp_path / "ws" / "keys" / "id_rsa").stat().st_mode & 0o777 == 0o600
    assert not (tmp_path / "ws" / "keys" / "id_ed25519").exists()
    assert workspace_values(stack, tmp_path / "ws")["ssh_public_key"] == key  # kept


def test_t4_opens_the_task_port_and_uses_standard_ssd(tmp_path: Path) -> None:
    recorded = _run("t4_1", tmp_path)
    _common(recorded, "t4-1", "Standard_NC4as_T4_v3", 1)
    (vm,) = _of(recorded, VM)
    assert _image(vm) == HPC
    assert vm["storageProfile"]["osDisk"]["managedDisk"] == {
        "storageAccountType": "StandardSSD_LRS"}
    rules = _rules(recorded)
    assert set(rules) == {"ssh", "tcp-8888", "cluster"}
    assert rules["tcp-8888"]["destinationPortRange"] == "8888"


def test_spot_cpu_is_spot_with_delete_and_no_price_cap(tmp_path: Path) -> None:
    recorded = _run("cpu_spot", tmp_path)
    _common(recorded, "cpu-spot", "Standard_D4s_v5", 1)
    (vm,) = _of(recorded, VM)
    assert vm["priority"] == "Spot" and vm["evictionPolicy"] == "Delete"
    assert vm["billingProfile"] == {"maxPrice": -1}
    assert vm["zones"] == ["2"]
    assert _image(vm) == UBUNTU
    assert vm["securityProfile"] == {"securityType": "TrustedLaunch", "uefiSettings": {
        "secureBootEnabled": True, "vTpmEnabled": True}}
    assert vm["storageProfile"]["osDisk"]["managedDisk"] == {"storageAccountType": "Standard_LRS"}
    assert vm["tags"]["owner"] == "ci"
    (provider,) = [r for r in recorded if r.type == "pulumi:providers:azure-native"]
    assert provider.inputs["subscriptionId"] == "11111111-2222-3333-4444-555555555555"
    assert provider.inputs["location"] == "westus2"


def test_two_infiniband_nodes_share_one_availability_set(tmp_path: Path) -> None:
    recorded = _run("ib_2node_ports", tmp_path)
    _common(recorded, "ib-2node-ports", "Standard_ND96isr_MI300X_v5", 2)
    (aset,) = _of(recorded, "azure-native:compute:AvailabilitySet")
    assert aset["sku"] == {"name": "Aligned"} and aset["platformFaultDomainCount"] == 1
    vms = _of(recorded, VM)
    assert all(vm["availabilitySet"] == {"id": "availability_set-id"} for vm in vms)
    assert all(_image(vm) == ROCM and vm["tags"]["project"] == "llm" for vm in vms)
    rules = _rules(recorded)
    assert rules["ssh"]["destinationPortRange"] == "22" and rules["ssh"]["protocol"] == "Tcp"
    assert rules["tcp-29500-29510"]["destinationPortRange"] == "29500-29510"
    assert rules["cluster"]["sourceAddressPrefix"] == "10.0.0.0/16"
    assert rules["cluster"]["protocol"] == "*"
    priorities = [r["priority"] for r in rules.values()]
    assert len(set(priorities)) == len(priorities)
    (subnet,) = _of(recorded, "azure-native:network:Subnet")
    assert subnet["networkSecurityGroup"] == {"id": "security_group-id"}


def test_the_program_holds_no_key_and_the_engine_is_pulumi_only(tmp_path: Path) -> None:
    stack = compile_case(CASES / "ib_2node_ports", tmp_path)
    text = program(stack)
    assert "ssh-ed25519" not in text and 'config.require("ssh_public_key")' in text
    assert stack.families() == ["pulumi"]
    assert choose_engine("azure", None, SkycConfig()) == "pulumi"
    with pytest.raises(UnsupportedFeature, match="engines for azure: pulumi"):
        choose_engine("azure", "terraform", SkycConfig())
    with pytest.raises(UnsupportedFeature, match="engines for azure: pulumi"):
        choose_engine("azure", None, SkycConfig.model_validate({"engine": {"azure": "terraform"}}))
    # a config-wide terraform default falls back to the target's own engine
    assert choose_engine("azure", None, SkycConfig(engine="terraform")) == "pulumi"


def _build(placement: Placement, **candidate: Any) -> None:
    build_stack("c", placement, ResourceCandidate(index=0, **candidate), config=SkycConfig(),
                workspace=Path("/nonexistent/ws"))


IB = Placement(cloud="azure", region="eastus2", instance_type="Standard_ND96isr_H100_v5",
               accelerators={"H100": 8}, num_nodes=2, hourly_cost=196.0)


@pytest.mark.parametrize(("placement", "candidate", "error", "match"), [
    (IB.model_copy(update={"use_spot": True}), {"network_tier": "best"},
     UnsupportedFeature, "use_spot"),
    (IB.model_copy(update={"zone": "1"}), {"network_tier": "best"}, UnsupportedFeature, "zone"),
    (IB.model_copy(update={"zone": "us-east-1a"}), {}, ConfigError, "availability zone"),
    (IB.model_copy(update={"region": "us-east-1"}), {}, ConfigError, "not an Azure region"),
    (IB.model_copy(update={"region": None}), {}, ConfigError, "no region"),
    (IB, {"disk_size": 16}, ConfigError,
     r"disk_size: 16 GiB is smaller than the image microsoft-dsvm:ubuntu-hpc:2204:latest "
     r"\(30 GiB\)"),
    (IB, {"disk_size": 5000}, ConfigError, "disk_size: 5000 GiB is more than"),
    (IB, {"disk_tier": "fast"}, ConfigError, "disk_tier"),
    (IB, {"ports": ("70000",)}, ConfigError, "ports"),
    (IB.model_copy(update={"instance_type": "Standard_D4_v3", "accelerators": None}),
     {"disk_tier": "high"}, ConfigError, "Premium SSD"),
    (IB.model_copy(update={"num_nodes": 201}), {}, UnsupportedFeature, "num_nodes"),
    (IB, {"labels": {"team/ml": "x"}}, ConfigError, "labels.team/ml: not an Azure tag"),
    (IB, {"labels": {"team": "x" * 257}}, ConfigError, "labels.team"),
])
def test_requests_azure_cannot_take_are_refused_by_field(
        placement: Placement, candidate: dict[str, Any], error: type[Exception],
        match: str) -> None:
    with pytest.raises(error, match=match):
        _build(placement, **candidate)


def test_spot_and_zones_without_the_fabric_are_fine(tmp_path: Path) -> None:
    spot = IB.model_copy(update={"use_spot": True, "zone": "eastus2-3"})
    stack = build_stack("c", spot, ResourceCandidate(index=0), config=SkycConfig(),
                        workspace=tmp_path)
    vm = stack.resource("node_1").properties
    assert vm["zones"] == ["3"] and vm["priority"] == "Spot"
    assert "availability_set" not in vm


def test_nodes_from_outputs(tmp_path: Path) -> None:
    outputs = {"names": ["skyc-c-head", "skyc-c-worker1"],
               "private_ips": ["10.0.0.4", "10.0.0.5"],
               "public_ips": ["20.1.2.3", "20.1.2.4"], "ssh_user": "azureuser"}
    nodes = nodes_from_outputs("azure", "c", outputs, config=SkycConfig(), workspace=tmp_path)
    assert [(n.name, n.ip, n.host, n.user) for n in nodes] == [
        ("head", "10.0.0.4", "20.1.2.3", "azureuser"),
        ("worker1", "10.0.0.5", "20.1.2.4", "azureuser")]
    assert nodes[0].identity_file == str(tmp_path / "keys" / "id_rsa")
    with pytest.raises(EngineError, match="public IP for skyc-c-worker1"):
        nodes_from_outputs("azure", "c", {**outputs, "public_ips": ["20.1.2.3", None]},
                           config=SkycConfig(), workspace=tmp_path)
    with pytest.raises(EngineError, match="lack names"):
        nodes_from_outputs("azure", "c", {k: v for k, v in outputs.items() if k != "names"},
                           config=SkycConfig(), workspace=tmp_path)


def test_names_fit_azure(tmp_path: Path) -> None:
    """VM and host names take no underscores and at most 64 characters; resource group
    names are unique per subscription, so a shortened name keeps a hash of the cluster's."""
    long_name = "a" * 63
    placement = IB.model_copy(update={"num_nodes": 200})
    stack = build_stack(long_name, placement, ResourceCandidate(index=0), config=SkycConfig(),
                        workspace=tmp_path)
    names = stack.outputs["names"].value
    assert len(names) == 200 and max(len(n) for n in names) <= 64
    assert names[199].endswith("-worker199")
    groups = set()
    for cluster in ("my_cluster", "my-cluster", long_name, long_name[:-1] + "b"):
        stack = build_stack(cluster, IB, ResourceCandidate(index=0), config=SkycConfig(),
                            workspace=tmp_path)
        group = stack.resource("resource_group").properties["resource_group_name"]
        vm = stack.resource("node_0").properties
        assert "_" not in vm["vm_name"] and len(vm["vm_name"]) <= 64
        groups.add(group)
    assert len(groups) == 4
