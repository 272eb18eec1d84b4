"""Names on a cloud carry the cluster's owner's hash, and the owner is fixed for the
cluster's life.

Stacks are built by the real compiler for every cloud target and read as data (AWS
also as the Terraform JSON its emitter writes); the GCP, Azure and Kubernetes golden
programs, which carry the same names, run under Pulumi's mock runtime in their own
test modules (no Pulumi CLI runs here). Workspaces are real folders; the legacy
stacks under ``tests/fixtures/compile/legacy/`` are what skyc wrote for four golden
cases before names carried an owner.
"""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path
from typing import Any

import pytest

from skyc.compiler import build_stack, workspace_values
from skyc.compiler.aws import roles
from skyc.compiler.azure.lowering import MAX_BASE_NAME, base_name, vm_name
from skyc.compiler.gcp import names as gcp_names
from skyc.compiler.kubernetes import manifest
from skyc.errors import ConfigError
from skyc.model.owner import default_owner, owner, owner_hash
from skyc.model.stack import Block
from skyc.model.workspace import ENGINE_FILE
from skyc.settings.config import SkycConfig
from skyc.stacks import Stack, emit
from skyc.stacks.registry import write_stack
from skyc.stacks.workspace import OWNER_FILE, recorded_owner
from tests.compiler.golden import ROOT, load

LEGACY = ROOT / "legacy"
# A case per cloud target, with the most kinds of named resources.
CASES = {
    "aws": ROOT / "aws" / "jobs_controller",
    "gcp": ROOT / "gcp" / "cpu_2node_ports",
    "azure": ROOT / "azure" / "ib_2node_ports",
    "kubernetes": ROOT / "kubernetes" / "two_nodes_ports",
}
# Names scoped inside another resource (a subnet in its network, an extension on its
# VM, a policy on its role), the same in every cluster.
SCOPED = {"subnet_name", "vm_extension_name"}


def _build(case: Path, workspace: Path, user: str | None) -> Stack:
    cluster, placement, candidate, config = load(case)
    config = config.model_copy(update={"user": user})
    return build_stack(cluster, placement, candidate, config=config, workspace=workspace)


def _cloud_names(stack: Stack) -> set[str]:
    """Every name the stack gives a cloud resource (not names scoped inside one)."""
    found: set[str] = set()
    for res in stack.resources:
        props = res.properties
        if stack.cloud == "kubernetes":
            found.add(props["metadata"]["name"])
            continue
        for key, value in props.items():
            if isinstance(value, str) and key not in SCOPED and (
                    (key == "name" and res.key != "controller_policy") or key.endswith("_name")):
                found.add(value)
        tags = props.get("tags")
        if isinstance(tags, dict):      # AWS: the Name tag
            found.add(tags.get("Name", ""))
        elif isinstance(tags, list):    # GCP: the network tag firewall rules target
            found.update(tags)
    found.discard("")
    return found


def _labelled(stack: Stack) -> list[dict[str, str]]:
    """The tags or labels of every resource that carries some."""
    out: list[dict[str, str]] = []

    def walk(value: Any) -> None:
        if isinstance(value, Block):
            walk(value.values)
        elif isinstance(value, dict):
            for key, item in value.items():
                if key in ("tags", "labels", "volume_tags") and isinstance(item, dict):
                    out.append(item)
                else:
                    walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for res in stack.resources:
        walk(res.properties)
    return out


@pytest.mark.parametrize("cloud", sorted(CASES))
def test_two_owners_of_one_cluster_name_share_no_cloud_name(cloud: str, tmp_path: Path) -> None:
    alice = _build(CASES[cloud], tmp_path / "a", "alice@laptop")
    bob = _build(CASES[cloud], tmp_path / "b", "bob@ci-runner")
    ours, theirs = _cloud_names(alice), _cloud_names(bob)
    assert len(ours) >= 3 and len(theirs) == len(ours)
    assert not ours & theirs, ours & theirs
    assert all(owner_hash("alice@laptop") in name for name in ours), ours
    for stack, who in ((alice, "alice@laptop"), (bob, "bob@ci-runner")):
        labelled = _labelled(stack)
        assert len(labelled) >= 3
        for labels in labelled:
            assert labels["skyc-cluster"] == stack.name, labels
            assert labels["skyc-owner"] == {"gcp": who.replace("@", "_"),
                                            "kubernetes": who.replace("@", "-")}.get(cloud, who)


def test_the_shared_networks_names_carry_their_owner_s_hash() -> None:
    from skyc.compiler import network_part
    from skyc.model.owner import owner_hash

    for cloud, kind in (("aws", "aws_vpc"), ("gcp", "gcp.compute.Network")):
        part = network_part(cloud)
        assert part is not None
        region = "us-east-1" if cloud == "aws" else "us-central1"
        stack = part.network_stack(region, [None], "alice@laptop", SkycConfig())
        [vpc] = [r for r in stack.resources if kind in r.types.values()]
        name = vpc.properties["tags"]["Name"] if cloud == "aws" else vpc.properties["name"]
        assert name == f"skyc-net-{region}-{owner_hash('alice@laptop')}"
        assert stack.labels["skyc-owner"] == "alice@laptop"


def test_aws_terraform_names_carry_the_owner_hash(tmp_path: Path) -> None:
    stack = _build(CASES["aws"], tmp_path, "alice@laptop")
    doc = json.loads(emit(stack, "terraform")["main.tf.json"])
    res = doc["resource"]
    name = f"skyc-jobs-controller-{owner_hash('alice@laptop')}"
    assert res["aws_key_pair"]["main"]["key_name"] == name
    assert res["aws_security_group"]["main"]["name"] == name
    assert res["aws_iam_role"]["controller"]["name"] == name
    assert "aws_vpc" not in res  # in the region's shared network, whose names follow
    assert res["aws_instance"]["node_0"]["tags"] == {
        "Name": f"{name}-head", "skyc-cluster": "jobs-controller", "skyc-owner": "alice@laptop",
        "skyc-role": "jobs-controller"}
    assert res["aws_security_group"]["main"]["description"] == "skyc cluster jobs-controller"


def test_long_cluster_names_are_cut_and_keep_the_owner_hash() -> None:
    cluster, short = "a" * 63, owner_hash("alice@laptop")
    gcp = gcp_names.resource_name(cluster, "worker12", short)
    assert len(gcp) <= 63 and gcp.endswith(f"-{short}-worker12")
    assert gcp != gcp_names.resource_name(cluster, "worker12", owner_hash("bob"))
    assert gcp_names.resource_name("train", "head", short) == f"skyc-train-{short}-head"
    azure = base_name(cluster, short)
    assert len(azure) <= MAX_BASE_NAME and azure.endswith(f"-{short}")
    assert len(vm_name(cluster, 199, short)) <= 64
    assert base_name("train", short) == f"skyc-train-{short}"
    role = roles.role_name(cluster, short)
    assert len(role) <= 64 and role.endswith(f"-{short}")
    assert roles.role_name(cluster) == roles.role_name(cluster, "")  # unchanged without one
    service = manifest.dns_name(cluster, short)
    assert len(service) <= manifest.MAX_OWNED and service.endswith(f"-{short}")
    assert manifest.dns_name("My_Train", short) != manifest.dns_name("my-train", short)


def test_owner_is_the_config_user_else_user_at_host(monkeypatch: pytest.MonkeyPatch) -> None:
    assert owner(SkycConfig(user="ci-bot")) == "ci-bot"
    monkeypatch.setenv("LOGNAME", "Dana Smith")  # getpass reads LOGNAME first
    host = re.sub(r"[^A-Za-z0-9._@+-]+", "-", socket.gethostname().split(".")[0])
    assert default_owner() == f"Dana-Smith@{host}"
    assert owner(SkycConfig()) == default_owner()
    digest = owner_hash("ci-bot")
    assert re.fullmatch(r"[0-9a-f]{4}", digest) and digest == owner_hash("ci-bot")
    assert digest != owner_hash("ci-bot2")


def test_the_recorded_owner_wins_over_the_current_user(tmp_path: Path) -> None:
    """A cluster created by alice, planned again by bob (a teammate with the workspace,
    or CI) and re-applied by carol: its stack is the one alice's apply wrote."""
    workspace = tmp_path / "train"
    first = _build(CASES["aws"], workspace, "alice@laptop")
    write_stack(first, workspace, workspace_values(first, workspace))
    assert recorded_owner(workspace) == "alice@laptop"
    for user in ("bob@ci-runner", "carol"):
        again = _build(CASES["aws"], workspace, user)
        assert emit(again, "terraform") == emit(first, "terraform")
        write_stack(again, workspace, workspace_values(again, workspace))
        assert (workspace / OWNER_FILE).read_text() == "alice@laptop\n"


def test_a_bad_recorded_owner_is_refused_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / OWNER_FILE).write_text("alice smith; rm -rf /\n")
    with pytest.raises(ConfigError, match=f"{OWNER_FILE}: .* is not a cluster owner"):
        _build(CASES["gcp"], tmp_path, "bob")


@pytest.mark.parametrize("legacy", sorted(LEGACY.glob("*/*/*")),
                         ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
def test_a_cluster_created_before_owners_keeps_its_names(legacy: Path, tmp_path: Path) -> None:
    """The workspace skyc wrote for the cluster before owners were recorded: the next
    build (whoever makes it) emits the same stack, byte for byte, and records no owner,
    so its next apply replaces nothing."""
    engine = "terraform" if legacy.name.endswith(".json") else "pulumi"
    case = ROOT / legacy.parent.parent.name / legacy.parent.name
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / legacy.name).write_text(legacy.read_text())
    if engine == "pulumi":  # the project file, the same for every owner
        (workspace / "Pulumi.yaml").write_text((case / "Pulumi.yaml").read_text())
    (workspace / ENGINE_FILE).write_text(engine + "\n")
    stack = _build(case, workspace, "bob@ci-runner")
    assert emit(stack, engine)[legacy.name] == legacy.read_text()
    assert "skyc-owner" not in stack.labels
    if engine == "terraform":  # its values (a key pair) are quick to make
        workspace_values(stack, workspace)
        assert recorded_owner(workspace) is None


def test_exported_stack_files_are_not_a_cluster(tmp_path: Path) -> None:
    """A folder of stack files (``skyc compile``'s output) holds no cluster: compiling
    into it again gives the owner's names, not a legacy cluster's."""
    out = tmp_path / "out" / "train"
    first = _build(CASES["aws"], out, "alice@laptop")
    out.mkdir(parents=True)
    for name, text in emit(first, "terraform").items():
        (out / name).write_text(text)
    again = _build(CASES["aws"], out, "alice@laptop")
    assert emit(again, "terraform") == emit(first, "terraform")
    assert not (out / OWNER_FILE).exists()
