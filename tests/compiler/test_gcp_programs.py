"""The Pulumi programs of the GCP golden cases, run under Pulumi's own mock runtime (the
real pulumi_gcp classes; no CLI, plugin or cloud: none can be installed here), with the
recorded resources checked: machine type, guest accelerators, scheduling and spot, boot
disk and its image (per GPU driver), reservation affinity, TPU accelerator type and runtime
version, firewall ports, labels and metadata."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from skyc.compiler.gcp.machines import bundles_local_ssd

pytest.importorskip("pulumi_gcp", reason="the Pulumi SDKs (skyc[pulumi]) are not installed")

from skyc.compiler.gcp.outputs import nodes
from skyc.model.owner import owner_hash
from skyc.settings.config import SkycConfig
from skyc.stacks import emit
from skyc.stacks.pulumi_preview import RecordedResource, run_program
from tests.compiler.golden import OWNER, ROOT, compile_case
from tests.support.stack_inputs import NETWORK, with_network

KEYS = "skyc:ssh-ed25519 AAAA test"
INSTANCE = "gcp:compute/instance:Instance"
TPU = "gcp:tpu/v2Vm:V2Vm"
DLVM = "projects/deeplearning-platform-release/global/images/family/common-cu124-ubuntu-2204-py310"
DLVM_570 = ("projects/deeplearning-platform-release/global/images/family/"
            "common-cu128-ubuntu-2204-nvidia-570")
ON_DEMAND_GPU = {"onHostMaintenance": "TERMINATE", "automaticRestart": True,
                 "provisioningModel": "STANDARD"}
SPOT = {"onHostMaintenance": "TERMINATE", "automaticRestart": False, "preemptible": True,
        "provisioningModel": "SPOT", "instanceTerminationAction": "DELETE"}

# case -> what its VMs (or TPU VMs) must be
VMS: dict[str, dict[str, Any]] = {
    "a100x8_a2": {"machineType": "a2-highgpu-8g", "guestAccelerators": None,
                  "scheduling": ON_DEMAND_GPU, "disk": "pd-balanced", "image": DLVM},
    "h100x8_a3": {"machineType": "a3-edgegpu-8g", "guestAccelerators": None,
                  "scheduling": ON_DEMAND_GPU, "disk": "pd-ssd", "size": 512.0, "image": DLVM},
    "l4_g2": {"machineType": "g2-standard-4", "guestAccelerators": None,
              "scheduling": ON_DEMAND_GPU, "disk": "pd-balanced", "image": DLVM},
    "gcs_buckets_bindings": {"machineType": "g2-standard-4", "guestAccelerators": None,
                             "scheduling": ON_DEMAND_GPU, "disk": "pd-balanced",
                             "image": DLVM},
    "t4_n1_default_host": {"machineType": "n1-highmem-4",
                           "guestAccelerators": [{"type": "nvidia-tesla-t4", "count": 1.0}],
                           "scheduling": ON_DEMAND_GPU, "disk": "pd-balanced", "image": DLVM},
    "v100x8_spot": {"machineType": "n1-highmem-64",
                    "guestAccelerators": [{"type": "nvidia-tesla-v100", "count": 8.0}],
                    "scheduling": SPOT, "disk": "pd-balanced", "image": DLVM},
    # B200 needs driver 570: the cu128 family. On demand, A4 is granted only from a
    # reservation: the VM consumes the ones the config names.
    "b200_a4_reserved": {"machineType": "a4-highgpu-8g", "guestAccelerators": None,
                         "scheduling": ON_DEMAND_GPU, "disk": "hyperdisk-balanced",
                         "image": DLVM_570, "reservations": ["a4-res-1", "a4-res-2"]},
    "cpu_2node_ports": {
        "machineType": "n2d-highcpu-8", "guestAccelerators": None, "nodes": 2,
        "scheduling": {"onHostMaintenance": "TERMINATE", "automaticRestart": True,
                       "provisioningModel": "STANDARD"},   # compact placement: no migration
        "disk": "pd-balanced",
        "image": "projects/ubuntu-os-cloud/global/images/family/ubuntu-2204-lts"},
}
TPUS: dict[str, dict[str, Any]] = {
    "tpu_v4_8": {"acceleratorType": "v4-8", "runtimeVersion": "tpu-ubuntu2204-base",
                 "spot": False, "hosts": 1},
    "tpu_v4_32_multihost": {"acceleratorType": "v4-32", "runtimeVersion": "tpu-vm-v4-pt-2.0",
                            "spot": False, "hosts": 4},
    "tpu_v5e_16_spot": {"acceleratorType": "v5litepod-16",
                        "runtimeVersion": "v2-alpha-tpuv5-lite", "spot": True, "hosts": 4},
}
CASES = sorted([*VMS, *TPUS])


def _run(case: Path, tmp_path: Path) -> tuple[Any, dict[str, RecordedResource]]:
    stack = compile_case(case, tmp_path)
    config = with_network(stack, {"ssh_keys": KEYS, **(
        {"project": "my-project-1"} if "project" in stack.variables else {})})
    recorded = run_program(emit(stack, "pulumi")["__main__.py"], stack=stack.name,
                           config=config)
    return stack, {r.name: r for r in recorded}


def test_every_gcp_case_is_checked() -> None:
    assert sorted(p.name for p in (ROOT / "gcp").iterdir() if p.is_dir()) == CASES


@pytest.mark.parametrize("name", CASES)
def test_network_firewall_labels_and_metadata(name: str, tmp_path: Path) -> None:
    stack, recorded = _run(ROOT / "gcp" / name, tmp_path)
    assert set(recorded) == {r.key for r in stack.resources} | {"gcp"}
    provider = recorded["gcp"].inputs
    assert provider["region"] == stack.region
    assert provider["project"] == ("ml-research-1" if name == "a100x8_a2" else "my-project-1")
    # The network is the region's shared one (its own stack): its ids are inputs.
    assert "network" not in recorded and "subnetwork" not in recorded
    ssh = recorded["firewall_ssh"].inputs
    assert ssh["allows"] == [{"protocol": "tcp", "ports": ["22"]}]
    assert ssh["sourceRanges"] == ["0.0.0.0/0"] and ssh["network"] == NETWORK["vpc_id"]
    internal = recorded["firewall_internal"].inputs
    tag = ssh["targetTags"]
    assert internal["sourceTags"] == tag and "sourceRanges" not in internal
    assert {a["protocol"] for a in internal["allows"]} == {"tcp", "udp", "icmp"}
    assert internal["targetTags"] == tag
    ports = recorded.get("firewall_ports")
    if name == "cpu_2node_ports":
        assert ports is not None
        assert ports.inputs["allows"] == [{"protocol": "tcp", "ports": ["8888", "9000-9010"]}]
        assert ports.inputs["targetTags"] == tag
    else:
        assert ports is None
    machines = [r for r in recorded.values() if r.type in (INSTANCE, TPU)]
    assert machines
    for machine in machines:
        inputs = machine.inputs
        assert inputs["tags"] == tag
        assert inputs["labels"]["skyc-cluster"] == stack.name
        assert inputs["zone"] == provider["zone"]
        meta = inputs["metadata"]
        assert meta["ssh-keys"] == KEYS and meta["enable-oslogin"] == "FALSE"
        assert meta["startup-script"].startswith("#!/bin/bash\n# skyc node bootstrap")
        assert "PRIVATE KEY" not in str(inputs)
        assert inputs["name"].startswith(f"skyc-{stack.name}-{owner_hash(OWNER)}-")
        assert inputs["labels"]["skyc-owner"] == "alice_workstation"  # GCP's label rules
    if name == "a100x8_a2":  # the task's labels, made to fit GCP's rules
        assert machines[0].inputs["labels"] == {"cost_center": "42", "skyc-cluster": stack.name,
                                                "skyc-owner": "alice_workstation",
                                                "team": "ml-research"}


@pytest.mark.parametrize("name", sorted(VMS))
def test_vms(name: str, tmp_path: Path) -> None:
    want = VMS[name]
    _, recorded = _run(ROOT / "gcp" / name, tmp_path)
    vms = sorted((r for r in recorded.values() if r.type == INSTANCE), key=lambda r: r.name)
    assert [r.name for r in vms] == [f"node_{i}" for i in range(want.get("nodes", 1))]
    for vm in vms:
        inputs = vm.inputs
        assert inputs["machineType"] == want["machineType"]
        assert inputs.get("guestAccelerators") == want["guestAccelerators"]
        assert inputs["scheduling"] == want["scheduling"]
        disk = inputs["bootDisk"]["initializeParams"]
        assert disk["type"] == want["disk"] and disk["image"] == want["image"]
        assert disk["size"] == want.get("size", 256.0)
        assert disk["labels"] == inputs["labels"]
        interface = inputs["networkInterfaces"][0]
        assert (interface["network"], interface["subnetwork"]) == (
            NETWORK["vpc_id"], NETWORK["subnet_id"])
        assert interface["accessConfigs"] == [{"networkTier": "PREMIUM"}]
        spot = inputs["scheduling"]["provisioningModel"] == "SPOT"
        # skyc stop/start: not for spot VMs, nor for types that bundle local SSD (GCP
        # wants discard-local-ssd on stop, which the provider cannot pass)
        stoppable = not spot and not bundles_local_ssd(want["machineType"])
        assert inputs.get("desiredStatus") == ("RUNNING" if stoppable else None)
        gpu = want["image"] in (DLVM, DLVM_570)
        assert (inputs["metadata"].get("install-nvidia-driver") == "True") == gpu
        reservations = want.get("reservations")
        assert inputs.get("reservationAffinity") == (reservations and {
            "type": "SPECIFIC_RESERVATION", "specificReservation": {
                "key": "compute.googleapis.com/reservation-name", "values": reservations}})
    policy = recorded.get("placement_policy")
    if want.get("nodes", 1) > 1:
        assert policy is not None
        assert policy.inputs["groupPlacementPolicy"] == {"collocation": "COLLOCATED",
                                                         "vmCount": 2.0}
        assert all(vm.inputs["resourcePolicies"] == "placement_policy-id" for vm in vms)
    else:
        assert policy is None and all("resourcePolicies" not in vm.inputs for vm in vms)


def test_the_service_account_reaches_the_tasks_gcs_buckets_and_no_other(
        tmp_path: Path) -> None:
    """A binding per GCS bucket the task mounts (a bucket skyc creates goes to GCS on
    GCP): object viewer where the nodes only copy, object admin where they write; the
    member is the cluster's own service account, the one its VMs carry."""
    from skyc.model.stack import Ref

    stack, recorded = _run(ROOT / "gcp" / "gcs_buckets_bindings", tmp_path)
    bindings = {r.inputs["bucket"]: r for r in recorded.values()
                if r.type == "gcp:storage/bucketIAMMember:BucketIAMMember"}
    assert {b: r.inputs["role"] for b, r in bindings.items()} == {
        "my-ckpts": "roles/storage.objectAdmin", "team-datasets": "roles/storage.objectViewer"}
    # The member is the account's own (known once the account exists: unknown here).
    account = Ref(resource="service_account", attribute="member")
    assert [r.properties["member"] for r in stack.resources
            if r.key.startswith("bucket_access_")] == [account, account]
    assert all("member" in r.inputs for r in bindings.values())


@pytest.mark.parametrize("name", sorted(TPUS))
def test_tpu_vms(name: str, tmp_path: Path) -> None:
    want = TPUS[name]
    stack, recorded = _run(ROOT / "gcp" / name, tmp_path)
    assert not [r for r in recorded.values() if r.type == INSTANCE]
    tpus = [r for r in recorded.values() if r.type == TPU]
    assert [r.name for r in tpus] == ["tpu_0"]                  # one resource, even multi-host
    inputs = tpus[0].inputs
    assert inputs["acceleratorType"] == want["acceleratorType"]
    assert inputs["runtimeVersion"] == want["runtimeVersion"]
    assert inputs["networkConfig"] == {"network": NETWORK["vpc_id"],
                                       "subnetwork": NETWORK["subnet_id"],
                                       "enableExternalIps": True}
    assert inputs.get("schedulingConfig") == ({"spot": True} if want["spot"] else None)
    script = inputs["metadata"]["startup-script"]   # what the node agent reads it is
    assert (f"TPU_ACCELERATOR_TYPE={want['acceleratorType']} >> /etc/environment" in script)
    assert stack.outputs["tpu_hosts"].value == [want["hosts"]]


def test_multi_host_slice_workers_become_nodes(tmp_path: Path) -> None:
    """The outputs of a tpu-v4-32 as `pulumi stack output --json` prints them: 4 workers,
    4 nodes with ranks in worker order."""
    endpoints = [{"accessConfigs": [{"externalIp": f"34.0.0.{i}"}], "ipAddress": f"10.0.0.{i}",
                  "port": 8470} for i in range(2, 6)]
    outputs = {"instance_names": ["skyc-tpu-head"], "ssh_user": "skyc",
               "tpu_endpoints": [endpoints], "tpu_hosts": [4]}
    found = nodes("tpu", outputs, config=SkycConfig(), workspace=tmp_path)
    assert [(n.name, n.rank, n.ip, n.host) for n in found] == [
        ("head", 0, "10.0.0.2", "34.0.0.2"), ("worker1", 1, "10.0.0.3", "34.0.0.3"),
        ("worker2", 2, "10.0.0.4", "34.0.0.4"), ("worker3", 3, "10.0.0.5", "34.0.0.5")]
    assert {n.user for n in found} == {"skyc"}
    assert {n.identity_file for n in found} == {str(tmp_path / "keys" / "id_ed25519")}


def test_vm_outputs_become_nodes(tmp_path: Path) -> None:
    outputs = {"instance_names": ["skyc-c-head", "skyc-c-worker1"], "ssh_user": "skyc",
               "internal_ips": ["10.0.0.2", "10.0.0.3"], "external_ips": ["34.1.1.1", None]}
    found = nodes("c", outputs, config=SkycConfig(), workspace=tmp_path)
    assert [(n.name, n.ip, n.host) for n in found] == [
        ("head", "10.0.0.2", "34.1.1.1"), ("worker1", "10.0.0.3", "10.0.0.3")]


@pytest.mark.parametrize(("machine", "bundled"), [
    ("a3-highgpu-8g", True), ("a3-ultragpu-8g", True), ("a3-ultragpu-8g-nolssd", False),
    ("a4-highgpu-8g", True), ("a2-ultragpu-8g", True), ("a2-highgpu-8g", False),
    ("g2-standard-8", False), ("n4-standard-8", False),
])
def test_which_types_bundle_local_ssd(machine: str, bundled: bool) -> None:
    assert bundles_local_ssd(machine) is bundled
