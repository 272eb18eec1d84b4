"""A task's buckets as skyc reads them from file_mounts: SkyPilot's forms and meanings,
each store's name rules, and what is refused (naming the field and the fix)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from skyc.errors import StorageError
from skyc.settings.config import SkycConfig
from skyc.storage import bucket_uses, parse_bucket_url
from skyc.storage.access import rclone_env
from skyc.task import load_tasks


def _task(tmp_path: Path, mounts: str) -> Any:
    path = tmp_path / "task.yaml"
    path.write_text(f"run: echo hi\nfile_mounts:\n{mounts}")
    return load_tasks(path).tasks[0]


def test_skypilot_forms_mean_what_they_mean_there(tmp_path: Path) -> None:
    (tmp_path / "ds").mkdir()
    task = _task(tmp_path, """\
  /copied: s3://src-bucket/some/prefix
  /mounted:
    source: gs://team-data
  /cached:
    name: my-ckpts
    mode: mount_cached
    persistent: false
  /uploaded:
    name: my-dataset
    source: ./ds
    mode: COPY
  /local: ./ds
""")
    uses = {u.target: u for u in bucket_uses(task, "aws", s3_configured=False)}
    assert set(uses) == {"/cached", "/copied", "/mounted", "/uploaded"}
    copied = uses["/copied"]
    assert (copied.store, copied.bucket, copied.path, copied.mode, copied.created) == (
        "s3", "src-bucket", "some/prefix", "COPY", False)
    assert copied.remote == "skycs3:src-bucket/some/prefix"
    assert (uses["/mounted"].store, uses["/mounted"].mode) == ("gcs", "MOUNT")
    cached = uses["/cached"]
    assert (cached.store, cached.mode, cached.created, cached.persistent) == (
        "s3", "MOUNT_CACHED", True, False)  # the store of the cloud the task lands on
    assert uses["/uploaded"].uploads == ("./ds",) and uses["/uploaded"].persistent
    on_gcp = {u.target: u for u in bucket_uses(task, "gcp", s3_configured=False)}
    assert on_gcp["/cached"].store == "gcs" and on_gcp["/cached"].url == "gs://my-ckpts"


@pytest.mark.parametrize(("mounts", "message"), [
    ("  /d: s3://Bad_Name/x\n", "file_mounts./d.source: 'Bad_Name' is not a valid S3 bucket"),
    ("  /d: {name: ab}\n", "file_mounts./d.name: 'ab' is not a valid S3 bucket name: it "
     "must be 3 to 63"),
    ("  /d: {name: my-google-bucket, store: gcs}\n", "must not start with 'goog' nor "
     "contain 'google'"),
    ("  /d: {name: x, source: s3://other}\n", "file_mounts./d: name and a bucket source "
     "are both given"),
    ("  /d: {source: ./local}\n", "file_mounts./d: local sources need a bucket name"),
    ("  /d: {source: s3://a-bucket, store: gcs}\n", "file_mounts./d.store: gcs does not "
     "match the source"),
    ("  /d: ftp://host/file\n", "file_mounts./d: 'ftp://host/file' is not a bucket URL"),
    ("  /etc: s3://a-bucket\n", "file_mounts./etc: a bucket cannot be mounted over /etc"),
    ("  /usr/local/x: s3://a-bucket\n", "cannot be mounted over /usr/local/x"),
    ("  ~/.ssh: s3://a-bucket\n", "cannot be mounted over ~/.ssh"),
    ("  /d: https://acct.blob.core.windows.net/\n", "not a bucket URL"),
])
def test_what_cannot_be_used_as_written_is_refused_naming_the_field(
        tmp_path: Path, mounts: str, message: str) -> None:
    task = _task(tmp_path, mounts)
    with pytest.raises(StorageError) as err:
        bucket_uses(task, "aws", s3_configured=True)
    assert message in str(err.value)


def test_a_created_bucket_off_the_clouds_goes_to_s3_only_when_it_is_set_up(
        tmp_path: Path) -> None:
    task = _task(tmp_path, "  /d: {name: my-bucket}\n")
    assert bucket_uses(task, "local", s3_configured=True)[0].store == "s3"
    with pytest.raises(StorageError) as err:
        bucket_uses(task, "ssh", s3_configured=False)
    assert "file_mounts./d.store: the task runs on ssh, which has no store of its own" in (
        str(err.value))
    assert "store: s3" in (err.value.hint or "")
    # Not placed yet (plan's first look): a created bucket's store is left open.
    assert bucket_uses(task, None, s3_configured=False)[0].created


def test_urls_of_every_store_are_parsed() -> None:
    azure = parse_bucket_url("https://acct.blob.core.windows.net/box/a/b")
    assert (azure.store, azure.account, azure.bucket, azure.path) == (
        "azure", "acct", "box", "a/b")
    assert azure.url == "https://acct.blob.core.windows.net/box/a/b"
    assert parse_bucket_url("r2://bk/p").url == "r2://bk/p"
    assert parse_bucket_url("gcs://bk").url == "gs://bk"
    with pytest.raises(StorageError):
        parse_bucket_url("/local/path")


def test_the_nodes_get_the_users_credentials_and_the_endpoint_nothing_else(
        tmp_path: Path) -> None:
    task = _task(tmp_path, "  /a: s3://one-bucket\n  /b: s3://two-bucket\n")
    config = SkycConfig.model_validate({"aws": {"endpoint_url": "http://127.0.0.1:9"}})
    env = rclone_env(bucket_uses(task, "local", s3_configured=True), config,
                     env={"AWS_ACCESS_KEY_ID": "AKID", "AWS_SECRET_ACCESS_KEY": "SECRET"},
                     home=tmp_path)
    assert env == {
        "RCLONE_CONFIG_SKYCS3_ACCESS_KEY_ID": "AKID",
        "RCLONE_CONFIG_SKYCS3_ENDPOINT": "http://127.0.0.1:9",
        "RCLONE_CONFIG_SKYCS3_FORCE_PATH_STYLE": "true",
        "RCLONE_CONFIG_SKYCS3_PROVIDER": "Other",
        "RCLONE_CONFIG_SKYCS3_REGION": "us-east-1",
        "RCLONE_CONFIG_SKYCS3_SECRET_ACCESS_KEY": "SECRET",
        "RCLONE_CONFIG_SKYCS3_TYPE": "s3",
    }
    (tmp_path / ".aws").mkdir()
    (tmp_path / ".aws" / "credentials").write_text(
        "[default]\naws_access_key_id = FROMFILE\naws_secret_access_key = S2\n")
    from_file = rclone_env(bucket_uses(task, "aws", s3_configured=True), SkycConfig(),
                           env={}, home=tmp_path)
    assert from_file["RCLONE_CONFIG_SKYCS3_ACCESS_KEY_ID"] == "FROMFILE"
    assert from_file["RCLONE_CONFIG_SKYCS3_PROVIDER"] == "AWS"
    # No credentials here: the nodes use their own identity (an instance role).
    none = rclone_env(bucket_uses(task, "aws", s3_configured=True), SkycConfig(), env={},
                      home=tmp_path / "empty")
    assert none["RCLONE_CONFIG_SKYCS3_ENV_AUTH"] == "true"
    assert "RCLONE_CONFIG_SKYCS3_ACCESS_KEY_ID" not in none
