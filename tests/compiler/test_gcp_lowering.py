"""GCP lowering rules: the engine choice, names and labels, boot disks per family, TPU
hosts, refusals of what GCP cannot take, and the workspace's inputs (no cloud needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skyc.compiler import build_stack, choose_engine, workspace_values
from skyc.compiler.gcp import machines, names
from skyc.errors import ConfigError, UnsupportedFeature
from skyc.model.plan import Placement
from skyc.model.stack import Stack
from skyc.settings.config import SkycConfig
from skyc.stacks import emit
from skyc.task.candidate import ResourceCandidate

V4_32 = Placement(cloud="gcp", region="us-central2", zone="us-central2-b", instance_type="TPU-VM",
                  accelerators={"tpu-v4-32": 1}, hourly_cost=51.52)
T4 = Placement(cloud="gcp", region="us-central1", zone="us-central1-a",
               instance_type="n1-highmem-4", accelerators={"T4": 1}, hourly_cost=0.6)


def _build(placement: Placement, candidate: ResourceCandidate | None = None,
           config: SkycConfig | None = None, cluster: str = "c") -> Stack:
    return build_stack(cluster, placement, candidate or ResourceCandidate(index=0),
                       config=config or SkycConfig(), workspace=Path("/nonexistent"))


def test_terraform_is_refused_for_gcp_naming_pulumi() -> None:
    assert choose_engine("gcp", None, SkycConfig()) == "pulumi"
    assert choose_engine("gcp", None, SkycConfig(engine="terraform")) == "pulumi"
    with pytest.raises(UnsupportedFeature) as info:
        choose_engine("gcp", "terraform", SkycConfig())
    assert "engines for gcp: pulumi" in info.value.message
    assert info.value.hint and "--engine pulumi" in info.value.hint
    stack = _build(T4)
    assert stack.families() == ["pulumi"]
    with pytest.raises(Exception, match="has no terraform type"):
        emit(stack, "terraform")


def test_resource_names_fit_gcp_rules() -> None:
    assert names.resource_name("train", "head") == "skyc-train-head"
    odd = names.resource_name("My_Cluster", "worker1")
    assert odd.startswith("skyc-my-cluster-") and odd.endswith("-worker1")
    assert odd != names.resource_name("my-cluster", "worker1")   # never the same name
    long = names.resource_name("a" * 63, "worker511")
    assert len(long) <= 63 and long.endswith("-worker511")
    assert names.resource_name("a" * 63, "worker1") != names.resource_name("a" * 62, "worker1")


def test_labels_are_sanitized_and_collisions_refused() -> None:
    assert names.labels({"Team": "ML Research", "9lives": "x" * 80, "ok-key_1": ""}) == {
        "l_9lives": "x" * 63, "ok-key_1": "", "team": "ml_research"}
    with pytest.raises(ConfigError, match="'Team' and 'team' both become"):
        names.labels({"Team": "a", "team": "b"})


@pytest.mark.parametrize(("machine", "tier", "want"), [
    ("n1-highmem-4", None, ("pd-balanced", None)),
    ("n1-highmem-4", "low", ("pd-standard", None)),
    ("n2-standard-8", "high", ("pd-ssd", None)),
    ("g2-standard-4", "low", ("pd-balanced", None)),          # G2 takes no pd-standard
    ("c3-standard-8", "low", ("pd-balanced", None)),
    ("c4-standard-8", None, ("hyperdisk-balanced", None)),     # C4 takes Hyperdisk only
    ("c4-standard-8", "high", ("hyperdisk-balanced", (12000, 500))),
    ("a3-ultragpu-8g", "best", ("hyperdisk-balanced", (16000, 1000))),
    ("a4-highgpu-8g", "low", ("hyperdisk-balanced", None)),
    ("a3-highgpu-8g", "high", ("pd-ssd", None)),
])
def test_boot_disk_per_family(machine: str, tier: str | None,
                              want: tuple[str, tuple[int, int] | None]) -> None:
    assert machines.boot_disk(machine, tier, 256) == want


def test_hyperdisk_performance_stays_within_the_disk_size() -> None:
    assert machines.boot_disk("n4-standard-8", "ultra", 20) == ("hyperdisk-balanced",
                                                               (10000, 1000))
    with pytest.raises(ConfigError, match="disk_size: 5 GiB"):
        machines.boot_disk("n2-standard-8", None, 5)
    with pytest.raises(ConfigError, match="disk_tier: 'fast'"):
        machines.boot_disk("n2-standard-8", "fast", 100)


@pytest.mark.parametrize(("accelerator", "hosts", "api_type"), [
    ("tpu-v2-8", 1, "v2-8"), ("tpu-v3-32", 4, "v3-32"), ("tpu-v4-8", 1, "v4-8"),
    ("tpu-v4-32", 4, "v4-32"), ("tpu-v5p-16", 2, "v5p-16"),
    ("tpu-v5litepod-8", 1, "v5litepod-8"), ("tpu-v5litepod-16", 4, "v5litepod-16"),
    ("tpu-v6e-4", 1, "v6e-4"), ("tpu-v6e-256", 64, "v6e-256"),
])
def test_tpu_hosts(accelerator: str, hosts: int, api_type: str) -> None:
    piece = machines.tpu_slice(accelerator)
    assert (piece.hosts, piece.accelerator_type) == (hosts, api_type)


def test_num_nodes_of_a_multi_host_slice_is_refused_clearly() -> None:
    with pytest.raises(UnsupportedFeature) as info:
        _build(V4_32.model_copy(update={"num_nodes": 2}))
    assert "multi-host slice (4 hosts" in info.value.message
    assert info.value.hint and "num_nodes: 1" in info.value.hint


def test_single_host_tpus_make_one_tpu_vm_per_node() -> None:
    v4_8 = V4_32.model_copy(update={"accelerators": {"tpu-v4-8": 1}, "num_nodes": 3})
    stack = _build(v4_8)
    assert [r.key for r in stack.resources if r.types["pulumi"] == "gcp.tpu.V2Vm"] == [
        "tpu_0", "tpu_1", "tpu_2"]
    assert stack.outputs["tpu_hosts"].value == [1, 1, 1]


def test_image_id_on_a_tpu_vm_is_refused_with_the_fix() -> None:
    with pytest.raises(UnsupportedFeature, match="TPU VMs boot a TPU runtime version"):
        _build(V4_32, ResourceCandidate(index=0, image_id="projects/p/global/images/i"))


@pytest.mark.parametrize(("update", "match"), [
    ({"region": "us-east-1", "zone": "use1-az1"}, "'us-east-1' is not a GCP region"),
    ({"zone": None}, "gcp placement has no zone"),
    ({"zone": "europe-west4-a"}, "not a zone of GCP region us-central1"),
    ({"instance_type": "n2-standard-8"}, "T4 attaches to N1 machine types only"),
    ({"instance_type": "z9-standard-8", "accelerators": None}, "knows no disk and placement"),
])
def test_placements_gcp_cannot_take_are_refused(update: dict[str, object], match: str) -> None:
    with pytest.raises((ConfigError, UnsupportedFeature), match=match):
        _build(T4.model_copy(update=update))


def test_bad_ports_are_refused_naming_the_field() -> None:
    for port in ("http", "70000", "10-5"):
        with pytest.raises(ConfigError, match="ports: "):
            _build(T4, ResourceCandidate(index=0, ports=(port,)))


def test_the_project_comes_from_the_config_or_the_credentials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pinned = _build(T4, config=SkycConfig.model_validate({"gcp": {"project": "my-project-1"}}))
    assert "project" not in pinned.variables
    assert pinned.providers["gcp"].settings["project"] == "my-project-1"
    stack = _build(T4)
    assert set(stack.variables) == {"power_state", "project", "ssh_keys", "vpc_id", "subnet_id"}
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SKYC_HOME", str(tmp_path / "skyc"))
    for var in ("GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_CLOUD_PROJECT", "CLOUDSDK_CONFIG",
                "CLOUDSDK_CORE_PROJECT", "GCLOUD_PROJECT"):
        monkeypatch.delenv(var, raising=False)
    workspace = tmp_path / "ws"
    with pytest.raises(ConfigError, match="no project to create cluster c"):
        workspace_values(stack, workspace)
    adc = home / ".config" / "gcloud" / "application_default_credentials.json"
    adc.parent.mkdir(parents=True)
    adc.write_text(json.dumps({"type": "authorized_user", "refresh_token": "1//SECRET",
                               "quota_project_id": "adc-project-1"}))
    values = workspace_values(stack, workspace)
    assert values["project"] == "adc-project-1"
    user, key = values["ssh_keys"].split(":", 1)
    assert user == "skyc" and key.startswith("ssh-ed25519 ")
    assert key == (workspace / "keys" / "id_ed25519.pub").read_text().strip()
    assert "SECRET" not in json.dumps(values) and "PRIVATE" not in json.dumps(values)


def test_on_demand_vms_can_be_stopped_and_started(tmp_path: Path) -> None:
    stack = _build(T4, config=SkycConfig.model_validate({"gcp": {"project": "my-project-1"}}))
    assert stack.variables["power_state"].default == "RUNNING"
    assert all(r.properties["desired_status"].name == "power_state"
               for r in stack.resources if r.key.startswith("node_"))
    workspace = tmp_path / "ws"
    assert workspace_values(stack, workspace)["power_state"] == "RUNNING"
    (workspace / "power_state").write_text("stopped\n")     # what skyc stop writes
    assert workspace_values(stack, workspace)["power_state"] == "TERMINATED"
    spot = _build(T4.model_copy(update={"use_spot": True}))
    assert "power_state" not in spot.variables              # spot VMs are not stopped
    assert "power_state" not in _build(V4_32).variables      # nor TPU VMs
