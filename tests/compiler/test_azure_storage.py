"""Azure containers skyc creates, and a cluster's access to them, as the generated
Pulumi programs register them under Pulumi's mock runtime with the real azure-native
SDK classes (no Azure account or Pulumi CLI exists here: a misspelt argument or
``*Args`` key still fails)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from skyc.compiler import build_stack
from skyc.compiler.azure import storage
from skyc.errors import ConfigError
from skyc.model.plan import Placement
from skyc.settings.config import SkycConfig
from skyc.storage.bucket_stacks import bucket_labels, bucket_stack
from skyc.storage.uses import BucketUse, bucket_uses
from skyc.task import load_tasks
from skyc.task.candidate import BucketGrant, ResourceCandidate
from tests.compiler.golden import ROOT, compile_case

pytest.importorskip("pulumi_azure_native",
                    reason="the Pulumi SDKs (skyc[pulumi]) are not installed")

from skyc.stacks.pulumi_preview import RecordedResource, run_program
from skyc.stacks.pulumi_python import program

SUB = "11111111-2222-3333-4444-555555555555"
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGolden skyc-test"
ROLE = "azure-native:authorization:RoleAssignment"


def _of(recorded: list[RecordedResource], token: str) -> list[dict[str, Any]]:
    return [r.inputs for r in sorted(recorded, key=lambda r: r.name) if r.type == token]


def test_a_created_containers_stack_is_private_encrypted_and_named_from_it() -> None:
    use = BucketUse(target="/ckpt", store="azure", bucket="team-ckpts",
                    account=storage.account("team-ckpts"), mode="MOUNT_CACHED",
                    created=True, persistent=False)
    config = SkycConfig.model_validate({"azure": {"subscription_id": SUB}})
    stack = bucket_stack(use, "westus2", bucket_labels(use, "alice@host", "train"), config)
    recorded = run_program(program(stack), stack=stack.name)
    (group,) = _of(recorded, "azure-native:resources:ResourceGroup")
    (account,) = _of(recorded, "azure-native:storage:StorageAccount")
    (container,) = _of(recorded, "azure-native:storage:BlobContainer")
    assert group["resourceGroupName"] == "skyc-storage-team-ckpts"
    assert group["location"] == account["location"] == "westus2"
    assert account["accountName"] == storage.account("team-ckpts")
    assert len(account["accountName"]) <= 24 and account["accountName"].isalnum()
    assert account["allowBlobPublicAccess"] is False
    assert account["enableHttpsTrafficOnly"] is True
    assert account["minimumTlsVersion"] == "TLS1_2"
    assert account["encryption"]["services"]["blob"]["enabled"] is True
    assert account["tags"]["skyc-cluster"] == "train"
    assert account["tags"]["skyc-persistent"] == "false"
    assert container["containerName"] == "team-ckpts"
    assert container["publicAccess"] == "None"
    assert container["metadata"]["skyc_owner"] == "alice@host"
    # the URL the nodes mount is the account the stack makes
    assert use.url == f"https://{storage.account('team-ckpts')}.blob.core.windows.net/team-ckpts"


def test_the_cluster_identity_gets_a_role_on_each_created_container_only(
        tmp_path: Path) -> None:
    stack = compile_case(ROOT / "azure" / "blob_identity", tmp_path)
    recorded = run_program(program(stack), stack=stack.name, config={"ssh_public_key": KEY})
    (identity,) = _of(recorded, "azure-native:managedidentity:UserAssignedIdentity")
    assert identity["location"] == "westus2"
    roles = {r["scope"].rsplit("/", 1)[1]: r for r in _of(recorded, ROLE)}
    # created: my-ckpts (written: Contributor) and shared-vocab (read: Reader); team-data
    # is a container skyc did not create, not-for-azure is in S3
    assert sorted(roles) == ["my-ckpts", "shared-vocab"]
    assert roles["my-ckpts"]["roleDefinitionId"].endswith(storage.WRITER)
    assert roles["shared-vocab"]["roleDefinitionId"].endswith(storage.READER)
    for bucket, role in roles.items():
        assert role["scope"] == storage.container_id(SUB, bucket)
        assert role["principalType"] == "ServicePrincipal"
        assert role["roleDefinitionId"].startswith(f"/subscriptions/{SUB}/providers/")
    vms = _of(recorded, "azure-native:compute:VirtualMachine")
    assert len(vms) == 2
    for vm in vms:
        assert vm["identity"]["type"] == "UserAssigned"
        assert len(vm["identity"]["userAssignedIdentities"]) == 1


def test_no_created_container_no_identity(tmp_path: Path) -> None:
    recorded = run_program(program(compile_case(ROOT / "azure" / "t4_1", tmp_path)),
                           stack="t4-1", config={"ssh_public_key": KEY})
    assert not _of(recorded, ROLE)
    assert not _of(recorded, "azure-native:managedidentity:UserAssignedIdentity")
    assert all("identity" not in vm for vm in
               _of(recorded, "azure-native:compute:VirtualMachine"))


def test_an_unknown_subscription_is_refused_naming_the_setting(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AZURE_SUBSCRIPTION_ID", "AZURE_CLIENT_ID", "AZURE_TENANT_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("AZURE_CONFIG_DIR", str(tmp_path / "azure"))
    placement = Placement(cloud="azure", region="eastus", instance_type="Standard_D4s_v5",
                          num_nodes=1, hourly_cost=0.2)
    candidate = ResourceCandidate(index=0, buckets=(
        BucketGrant(store=None, bucket="ckpts", write=True, created=True),))
    with pytest.raises(ConfigError, match=r"azure\.subscription_id"):
        build_stack("c", placement, candidate, config=SkycConfig(),
                    workspace=tmp_path / "ws")


def test_a_created_azure_container_is_used_in_the_account_its_stack_makes(
        tmp_path: Path) -> None:
    path = tmp_path / "task.yaml"
    path.write_text("run: echo hi\nfile_mounts:\n  /ckpt:\n    name: my-ckpts\n  /data:\n"
                    "    source: https://teamacct.blob.core.windows.net/data/x\n")
    created, read = bucket_uses(load_tasks(path).tasks[0], "azure", s3_configured=False)
    assert (created.store, created.account) == ("azure", storage.account("my-ckpts"))
    assert created.remote == f"skycaz{storage.account('my-ckpts')}:my-ckpts"
    assert (read.account, read.remote) == ("teamacct", "skycazteamacct:data/x")
