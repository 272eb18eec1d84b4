"""Whether the nodes can reach a task's buckets: on the store's own cloud through the
cluster's identity, elsewhere with the user's credentials for the store (or an endpoint
that takes none). A bucket they could not reach is refused before anything is
provisioned, naming the field and where the credentials are read from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from skyc.apply.buckets import check_buckets
from skyc.compiler.azure.storage import account
from skyc.errors import StorageError
from skyc.settings.config import SkycConfig
from skyc.state.database import StateDB
from skyc.storage import bucket_uses
from skyc.storage.access import reach_problem
from skyc.task import load_tasks

AZ = "https://teamacct.blob.core.windows.net/data"


def _task(tmp_path: Path, mounts: str) -> Any:
    path = tmp_path / "task.yaml"
    path.write_text(f"run: echo hi\nfile_mounts:\n{mounts}")
    return load_tasks(path).tasks[0]


def _use(tmp_path: Path, mount: str, cloud: str) -> Any:
    (use,) = bucket_uses(_task(tmp_path, mount), cloud, s3_configured=False)
    return use


def test_off_its_cloud_a_bucket_needs_the_users_credentials(tmp_path: Path) -> None:
    use = _use(tmp_path, "  /d: s3://team-data/x\n", "local")
    problem = reach_problem(use, SkycConfig(), "local", env={}, home=tmp_path)
    assert problem == ("file_mounts./d: nodes on local cannot reach s3://team-data/x: "
                       "no S3 bucket credentials were found here to give them")
    keys = {"AWS_ACCESS_KEY_ID": "AKIAEXAMPLE", "AWS_SECRET_ACCESS_KEY": "x"}
    assert reach_problem(use, SkycConfig(), "local", env=keys, home=tmp_path) is None
    endpoint = SkycConfig.model_validate({"aws": {"endpoint_url": "http://127.0.0.1:1"}})
    assert reach_problem(use, endpoint, "local", env={}, home=tmp_path) is None
    # on AWS the cluster's role reaches it
    assert reach_problem(use, SkycConfig(), "aws", env={}, home=tmp_path) is None
    gcs = _use(tmp_path, "  /g: gs://team-gcs\n", "aws")
    assert "no GCS bucket credentials" in (
        reach_problem(gcs, SkycConfig(), "aws", env={}, home=tmp_path) or "")
    key_file = tmp_path / "sa.json"
    key_file.write_text('{"type": "service_account"}')
    assert reach_problem(gcs, SkycConfig(), "aws", env={
        "GOOGLE_APPLICATION_CREDENTIALS": str(key_file)}, home=tmp_path) is None


def test_on_azure_only_containers_skyc_created_go_through_the_identity(
        tmp_path: Path) -> None:
    read = _use(tmp_path, f"  /d:\n    source: {AZ}\n", "azure")
    assert "nodes on azure cannot reach" in (
        reach_problem(read, SkycConfig(), "azure", env={}, home=tmp_path) or "")
    assert reach_problem(read, SkycConfig(), "azure", env={
        "AZURE_STORAGE_KEY": "a2V5", "AZURE_STORAGE_ACCOUNT": "teamacct"},
        home=tmp_path) is None
    # a key of another account does not reach it
    assert reach_problem(read, SkycConfig(), "azure", env={
        "AZURE_STORAGE_KEY": "a2V5", "AZURE_STORAGE_ACCOUNT": "otheracct"},
        home=tmp_path) is not None
    made = _use(tmp_path, "  /c:\n    name: my-ckpts\n", "azure")
    assert (made.store, made.account) == ("azure", account("my-ckpts"))
    assert reach_problem(made, SkycConfig(), "azure", env={}, home=tmp_path) is None


def test_apply_refuses_an_unreachable_bucket_before_anything_else(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE",
                 "AWS_SHARED_CREDENTIALS_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("SKYC_HOME", str(tmp_path / ".skyc"))
    task = _task(tmp_path, "  /d: s3://team-data/x\n")
    with StateDB() as db, pytest.raises(StorageError) as refused:
        check_buckets(task, "ssh", SkycConfig(), db)
    assert "file_mounts./d: nodes on ssh cannot reach s3://team-data/x" in str(refused.value)
    assert "AWS_ACCESS_KEY_ID" in (refused.value.hint or "")


def test_azure_nodes_use_their_managed_identity_for_created_containers(
        tmp_path: Path) -> None:
    from skyc.storage.access import rclone_env

    made = _use(tmp_path, "  /c:\n    name: my-ckpts\n", "azure")
    read = _use(tmp_path, f"  /d:\n    source: {AZ}\n", "azure")
    env = {"AZURE_STORAGE_KEY": "a2V5", "AZURE_STORAGE_ACCOUNT": "teamacct"}
    nodes = rclone_env([made, read], SkycConfig(), env=env, home=tmp_path, cloud="azure")
    mine = f"RCLONE_CONFIG_SKYCAZ{account('my-ckpts').upper()}_"
    assert nodes[mine + "USE_MSI"] == "true" and mine + "KEY" not in nodes
    assert nodes[mine + "ACCOUNT"] == account("my-ckpts")
    assert nodes["RCLONE_CONFIG_SKYCAZTEAMACCT_KEY"] == "a2V5"  # not skyc's: the user's key
    here = rclone_env([made], SkycConfig(), env={}, home=tmp_path)  # this machine
    assert here[mine + "ENV_AUTH"] == "true" and mine + "USE_MSI" not in here


def test_r2_needs_its_keys_though_its_endpoint_is_known(tmp_path: Path) -> None:
    (tmp_path / ".cloudflare").mkdir()
    (tmp_path / ".cloudflare" / "accountid").write_text("0123abcd\n")
    use = _use(tmp_path, "  /d: r2://team-r2/x\n", "local")
    problem = reach_problem(use, SkycConfig(), "local", env={}, home=tmp_path)
    assert problem is not None and "no R2 bucket credentials" in problem
    (tmp_path / ".cloudflare" / "r2.credentials").write_text(
        "[r2]\naws_access_key_id = K\naws_secret_access_key = S\n")
    assert reach_problem(use, SkycConfig(), "local", env={}, home=tmp_path) is None
