"""A team's state and the stacks' remote backend, as `examples/ci/` sets them up: a
cluster applied on AWS with a PostgreSQL state keeps its stack's state under a key of
its own in the S3 backend (with its lock file), and a plan of a change to it is the
real diff (what changes, nothing re-created), from the owner's home and from a CI
job's fresh home alike (the owner and public key come from the shared state).

Real parts: the PostgreSQL server (tests.support.postgres), a moto server on 127.0.0.1
serving EC2 and S3 (the terraform S3 backend's bucket and its lock file), the terraform
binary and AWS provider; every command a `skyc` subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.moto_server import CREDENTIALS, MotoServer, start_moto
from tests.support.postgres import PostgresServer, postgres_server  # noqa: F401 - fixture
from tests.support.terraform import plugin_dir, requires_aws_provider, requires_terraform

pytestmark = [pytest.mark.slow, pytest.mark.aws, requires_terraform, requires_aws_provider,
              pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[2]
TASK = ("name: ci\nresources:\n  infra: aws/us-east-1\n  instance_type: inf1.xlarge\n"
        "  disk_tier: low\n")


@pytest.fixture
def moto(tmp_path: Path) -> Iterator[MotoServer]:
    with start_moto(tmp_path / "moto.log") as server:
        yield server


def _home(root: Path, moto: MotoServer, url: str, user: str) -> dict[str, str]:
    """A fresh SKYC_HOME sharing the team's state and remote backend; its environment."""
    home = root / user
    home.mkdir(parents=True)
    (home / "config.yaml").write_text(yaml.safe_dump({
        "infra": ["aws"], "user": user, "aws": {"endpoint_url": moto.url},
        "backend": {"s3": {
            "bucket": "team-state", "key": "skyc", "region": "us-east-1",
            "endpoints": {"s3": moto.url}, "use_path_style": True, "use_lockfile": True,
            "skip_credentials_validation": True, "skip_requesting_account_id": True,
            "skip_metadata_api_check": True}}}))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SKYC_"))}
    env.update(CREDENTIALS, SKYC_HOME=str(home), SKYC_STATE_URL=url, COLUMNS="200",
               NO_COLOR="1", PYTHONPATH=str(ROOT))
    if plugin_dir():
        env["SKYC_TF_PLUGIN_DIR"] = str(plugin_dir())
    return env


def _skyc(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "skyc", *args], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL)


def _plan(env: dict[str, str], task: Path) -> dict[str, Any]:
    done = _skyc(env, "plan", str(task), "--format", "json")
    assert done.returncode == 0, done.stderr
    [stack] = json.loads(done.stdout)["stacks"]
    assert stack["status"] == "ok", stack
    return dict(stack)


def test_a_cluster_of_a_shared_state_keeps_its_stack_in_the_remote_backend(
        tmp_path: Path, moto: MotoServer, request: pytest.FixtureRequest) -> None:
    server: PostgresServer = request.getfixturevalue("postgres_server")
    url = server.create_database()
    s3 = moto.client("s3", "us-east-1")
    s3.create_bucket(Bucket="team-state")
    task = tmp_path / "ci.yaml"
    task.write_text(TASK)
    alice = _home(tmp_path, moto, url, "alice")
    applied = _skyc(alice, "apply", str(task), "--yes")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    try:
        keys = [o["Key"] for o in s3.list_objects_v2(Bucket="team-state")["Contents"]]
        # The cluster's own key, under the config's; and its region's shared network's.
        assert keys == ["skyc/ci.tfstate", "skyc/network-aws-us-east-1.tfstate"]
        state = json.loads(s3.get_object(Bucket="team-state", Key=keys[0])["Body"].read())
        assert "aws_instance" in {r["type"] for r in state["resources"]}
        workspace = Path(alice["SKYC_HOME"]) / "clusters" / "ci"
        assert not (workspace / "terraform.tfstate").exists()  # not on this machine
        # The owner's own plan, and a CI job's from a fresh home sharing the state and
        # the backend: the same real diff (no workspace of the cluster on CI's machine).
        ci = _home(tmp_path, moto, url, "ci")
        for who in (alice, ci):
            task.write_text(TASK)
            same = _plan(who, task)
            assert same["has_changes"] is False, same["resource_changes"]
            task.write_text(TASK + "  ports: [8080]\n")
            changed = _plan(who, task)
            acts = {rc["address"]: rc["actions"] for rc in changed["resource_changes"]}
            assert acts["aws_instance.node_0"] == ["no-op"], acts
            assert not [a for a, act in acts.items() if "delete" in act], acts
            assert sum(act != ["no-op"] for act in acts.values()) == 1, acts
        assert not (Path(ci["SKYC_HOME"]) / "clusters" / "ci").exists()  # plan wrote none
    finally:
        gone = _skyc(alice, "destroy", "ci", "--yes")
        assert gone.returncode == 0, gone.stderr
