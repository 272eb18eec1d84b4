"""R2 buckets skyc creates, through `skyc` as a user runs it, on `local` nodes.

R2 cannot be reached from here: a moto server on 127.0.0.1 stands in for R2's S3 API
(``r2.endpoint_url`` in the config; R2 speaks the same API). Real parts: the terraform
binary and AWS provider applying and destroying the R2 bucket's stack against it,
rclone and FUSE on the nodes. The user's R2 keys are in ~/.cloudflare/r2.credentials
(profile r2, as SkyPilot keeps them) and different from their AWS keys; neither lands
in a file skyc writes."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import Skyc
from tests.support.moto_server import MotoServer, start_moto
from tests.support.storage import FUSE_UNAVAILABLE, storage_user, user_s3
from tests.support.terraform import requires_aws_provider, requires_terraform

pytestmark = [pytest.mark.slow, pytest.mark.aws, requires_terraform, requires_aws_provider,
              pytest.mark.skipif(FUSE_UNAVAILABLE is not None,
                                 reason=FUSE_UNAVAILABLE or "")]

R2_SECRET = "skyc-r2-secret-61b0f2c9d4"

TASK = """\
name: r2t
resources:
  infra: local
file_mounts:
  ~/ckpt:
    name: {bucket}
    store: r2
    mode: MOUNT_CACHED
run: echo "from the node" > ~/ckpt/hello.txt
"""


@pytest.fixture
def moto(tmp_path: Path) -> Iterator[MotoServer]:
    with start_moto(tmp_path / "moto.log", skyc_amis=False, front=False) as server:
        yield server


def test_an_r2_bucket_is_created_used_and_deleted(skyc: Skyc, moto: MotoServer) -> None:
    storage_user(skyc, moto)
    config = yaml.safe_load((skyc.home / "config.yaml").read_text())
    config["r2"] = {"endpoint_url": moto.url}
    (skyc.home / "config.yaml").write_text(yaml.safe_dump(config))
    home = Path(skyc.env["HOME"])
    (home / ".cloudflare").mkdir(parents=True, exist_ok=True)
    (home / ".cloudflare" / "r2.credentials").write_text(
        f"[r2]\naws_access_key_id = R2KEYID\naws_secret_access_key = {R2_SECRET}\n")
    bucket = f"r2-{uuid.uuid4().hex[:8]}"
    skyc.write("r2.yaml", TASK.format(bucket=bucket))

    plan = json.loads(skyc.ok("plan", "r2.yaml", "--format", "json").stdout)
    (note,) = plan["notes"]["buckets"]
    assert (note["url"], note["action"], note["storage_price_basis"]) == (
        f"r2://{bucket}", "create", "global")

    skyc.ok("apply", "r2.yaml", "--yes", timeout=600)
    s3 = user_s3(moto)
    listed = s3.list_objects_v2(Bucket=bucket)
    assert [o["Key"] for o in listed.get("Contents", [])] == ["hello.txt"]
    stack = json.loads((skyc.home / "storage" / bucket / "main.tf.json").read_text())
    provider = stack["provider"]["aws"]
    assert provider["endpoints"] == [{"s3": moto.url}]
    assert provider["skip_requesting_account_id"] is True

    skyc.ok("down", "r2t", "--yes", timeout=300)
    skyc.ok("storage", "delete", bucket, "--yes", timeout=300)
    assert bucket not in {b["Name"] for b in s3.list_buckets()["Buckets"]}
    leaked = [p for p in skyc.home.rglob("*") if p.is_file() and R2_SECRET.encode()
              in p.read_bytes()]
    assert leaked == []


def test_the_engine_gets_r2s_keys_and_none_of_aws(tmp_path: Path) -> None:
    from skyc.errors import StorageError
    from skyc.settings.config import SkycConfig
    from skyc.storage.r2_engine import engine_env

    aws = {"AWS_ACCESS_KEY_ID": "AKIAAWS", "AWS_SECRET_ACCESS_KEY": "aws-secret",
           "AWS_SESSION_TOKEN": "aws-token", "AWS_PROFILE": "work"}
    with pytest.raises(StorageError, match="no R2 keys") as refused:
        engine_env(SkycConfig(), env=aws, home=tmp_path)
    assert "r2.credentials" in (refused.value.hint or "")
    (tmp_path / ".cloudflare").mkdir()
    (tmp_path / ".cloudflare" / "r2.credentials").write_text(
        "[r2]\naws_access_key_id = R2KEYID\naws_secret_access_key = r2-secret\n")
    env = engine_env(SkycConfig(), env=aws, home=tmp_path)
    assert (env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"]) == ("R2KEYID", "r2-secret")
    assert env["AWS_SESSION_TOKEN"] == env["AWS_PROFILE"] == ""
