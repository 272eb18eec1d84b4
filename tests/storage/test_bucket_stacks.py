"""The stacks of buckets skyc creates and what a cluster's stack grants its nodes, as
`skyc compile` writes them (a real subprocess); the bucket's Pulumi program run under
Pulumi's own mock runtime (the real SDK classes: no CLI, plugin or cloud here)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from skyc.settings.config import SkycConfig
from skyc.storage.bucket_stacks import bucket_labels, bucket_stack
from skyc.storage.uses import BucketUse

REPO = Path(__file__).resolve().parents[2]
SECRET = "compile-secret-3a61e0"
TASK = """\
name: tr
resources:
  infra: aws/us-east-1
  accelerators: A10G:1
file_mounts:
  /data: s3://team-data/x
  ~/ckpt:
    name: my-ckpts-x1
    mode: MOUNT_CACHED
    persistent: false
run: echo hi
"""


def _compile(tmp_path: Path, out: str, *extra: str) -> Path:
    (tmp_path / "t.yaml").write_text(TASK)
    env = {**os.environ, "SKYC_HOME": str(tmp_path / "home"), "PYTHONPATH": str(REPO),
           "AWS_ACCESS_KEY_ID": "AKIDCOMPILE", "AWS_SECRET_ACCESS_KEY": SECRET}
    done = subprocess.run([sys.executable, "-m", "skyc", "compile", "t.yaml", "-o", out,
                           *extra], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return tmp_path / out


def test_compile_writes_the_bucket_stack_and_the_clusters_role(tmp_path: Path) -> None:
    out = _compile(tmp_path, "out")
    plan = json.loads((out / "plan.json").read_text())
    assert [s["path"] for s in plan["stacks"]] == ["tr/main.tf.json",
                                                  "storage-my-ckpts-x1/main.tf.json",
                                                  "network-aws-us-east-1/main.tf.json"]
    bucket: dict[str, Any] = json.loads(
        (out / "storage-my-ckpts-x1" / "main.tf.json").read_text())["resource"]
    [made] = bucket["aws_s3_bucket"].values()
    assert made["bucket"] == "my-ckpts-x1" and made["force_destroy"] is True
    assert made["tags"]["skyc-cluster"] == "tr" and made["tags"]["skyc-persistent"] == "false"
    [block] = bucket["aws_s3_bucket_public_access_block"].values()
    assert all(block[k] is True for k in ("block_public_acls", "block_public_policy",
                                          "ignore_public_acls", "restrict_public_buckets"))
    [sse] = bucket["aws_s3_bucket_server_side_encryption_configuration"].values()
    assert sse["rule"][0]["apply_server_side_encryption_by_default"] == {
        "sse_algorithm": "AES256"}
    cluster = json.loads((out / "tr" / "main.tf.json").read_text())["resource"]
    [policy] = cluster["aws_iam_role_policy"].values()
    statements = {s["Sid"]: s for s in json.loads(policy["policy"])["Statement"]}
    assert statements["ListBuckets"]["Resource"] == ["arn:aws:s3:::my-ckpts-x1",
                                                     "arn:aws:s3:::team-data"]
    assert statements["WriteObjects"]["Resource"] == ["arn:aws:s3:::my-ckpts-x1/*"]
    again = _compile(tmp_path, "again")
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        assert path.read_bytes() == (again / path.relative_to(out)).read_bytes(), path
        assert SECRET.encode() not in path.read_bytes()


def test_the_buckets_pulumi_program_runs_under_the_mock_runtime(tmp_path: Path) -> None:
    pytest.importorskip("pulumi_aws", reason="the Pulumi SDKs (skyc[pulumi]) are not installed")
    from skyc.stacks import emit
    from skyc.stacks.pulumi_preview import run_program

    use = BucketUse(target="/d", store="s3", bucket="my-ckpts-x1", mode="MOUNT",
                    created=True, persistent=True)
    stack = bucket_stack(use, "us-west-2", bucket_labels(use, "alice", None), SkycConfig())
    recorded = {r.name: r for r in run_program(emit(stack, "pulumi")["__main__.py"],
                                               stack=stack.name)}
    assert recorded["bucket"].inputs["bucket"] == "my-ckpts-x1"
    assert recorded["bucket"].inputs["tags"] == {
        "skyc-bucket": "my-ckpts-x1", "skyc-owner": "alice", "skyc-persistent": "true"}
    assert recorded["public_access"].inputs["restrictPublicBuckets"] is True
    [rule] = recorded["encryption"].inputs["rules"]
    assert rule["applyServerSideEncryptionByDefault"] == {"sseAlgorithm": "AES256"}
    assert recorded["aws"].inputs["region"] == "us-west-2"


def test_the_review_comment_lists_the_buckets(tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text(TASK)
    env = {**os.environ, "SKYC_HOME": str(tmp_path / "home"), "PYTHONPATH": str(REPO),
           "AWS_ACCESS_KEY_ID": "AKIDCOMPILE", "AWS_SECRET_ACCESS_KEY": SECRET}
    done = subprocess.run([sys.executable, "-m", "skyc", "plan", "t.yaml", "--format",
                           "markdown", "--no-diff"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert ("| `s3://team-data/x` | read | - | `/data` | COPY | `tr` | $0.023/GB-month "
            "(store default) |") in done.stdout
    assert ("| `s3://my-ckpts-x1` | create | no | `~/ckpt` | MOUNT_CACHED | `tr` | "
            "$0.023/GB-month (us-east-1) |") in done.stdout
    assert SECRET not in done.stdout + done.stderr


def test_a_gcs_buckets_pulumi_program_runs_under_the_mock_runtime() -> None:
    pytest.importorskip("pulumi_gcp", reason="the Pulumi SDKs (skyc[pulumi]) are not installed")
    from skyc.stacks import emit
    from skyc.stacks.pulumi_preview import run_program

    use = BucketUse(target="/d", store="gcs", bucket="team-ckpts", mode="MOUNT_CACHED",
                    created=True, persistent=False)
    config = SkycConfig.model_validate({"gcp": {"project": "my-project-1"}})
    stack = bucket_stack(use, "us-central1", bucket_labels(use, "alice@host", "train"),
                         config)
    recorded = {r.name: r for r in run_program(emit(stack, "pulumi")["__main__.py"],
                                               stack=stack.name)}
    bucket = recorded["bucket"].inputs
    assert (bucket["name"], bucket["location"]) == ("team-ckpts", "US-CENTRAL1")
    assert bucket["uniformBucketLevelAccess"] is True
    assert bucket["publicAccessPrevention"] == "enforced" and bucket["forceDestroy"] is True
    assert bucket["labels"]["skyc-cluster"] == "train"
