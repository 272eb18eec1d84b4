"""Buckets through `skyc` as a user runs it (real subprocesses), on `local` nodes.

Real parts: a moto server on 127.0.0.1 as the AWS-compatible store (config
``aws.endpoint_url``), the terraform binary and AWS provider creating the buckets skyc
makes (their stacks against moto), rclone and FUSE on the nodes. One scenario, in
order (each bucket stack is a real apply and destroy): plan names the buckets; apply
checks them before anything is provisioned, creates two, uploads a local source,
mounts and copies on both nodes, and the checkpoint written through MOUNT_CACHED is in
the bucket when apply returns; `storage ls` lists them; a bucket in use is not deleted;
`down` destroys the bucket that goes with the cluster and keeps the persistent one;
`storage delete` removes it. The user's secret key lands in no file skyc writes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import Skyc
from tests.support.moto_server import MotoServer, start_moto
from tests.support.storage import FUSE_UNAVAILABLE, USER_SECRET, storage_user, user_s3
from tests.support.terraform import requires_aws_provider, requires_terraform

pytestmark = [pytest.mark.slow, pytest.mark.aws, requires_terraform, requires_aws_provider,
              pytest.mark.skipif(FUSE_UNAVAILABLE is not None,
                                 reason=FUSE_UNAVAILABLE or "")]

SECRET = USER_SECRET


@pytest.fixture
def moto(tmp_path: Path) -> Iterator[MotoServer]:
    with start_moto(tmp_path / "moto.log", skyc_amis=False, front=False) as server:
        yield server


def _buckets(s3: object) -> set[str]:
    return {b["Name"] for b in s3.list_buckets()["Buckets"]}  # type: ignore[attr-defined]


def _keys(s3: object, bucket: str) -> set[str]:
    listed = s3.list_objects_v2(Bucket=bucket)  # type: ignore[attr-defined]
    return {o["Key"] for o in listed.get("Contents", [])}


def _mounted_under(root: Path) -> list[str]:
    lines = Path("/proc/self/mountinfo").read_text().splitlines()
    return [ln.split()[4] for ln in lines if ln.split()[4].startswith(str(root))]


TASK = """\
name: st
resources:
  infra: local
num_nodes: 2
file_mounts:
  ~/copied: s3://{src}/data
  ~/mounted:
    source: s3://{src}
  ~/ckpt:
    name: {ckpt}
    mode: MOUNT_CACHED
    persistent: false
  ~/ds:
    name: {ds}
    source: ./dataset
    mode: COPY
run: |
  cat ~/copied/hello.txt
  cat ~/mounted/data/hello.txt
  ls ~/ds
  echo "step $SKYPILOT_NODE_RANK" > ~/ckpt/rank$SKYPILOT_NODE_RANK.txt
"""


def test_buckets_from_plan_to_delete(skyc: Skyc, moto: MotoServer) -> None:
    storage_user(skyc, moto)
    s3 = user_s3(moto)
    tag = uuid.uuid4().hex[:8]
    src, ckpt, ds = f"src-{tag}", f"ckpt-{tag}", f"ds-{tag}"
    s3.create_bucket(Bucket=src)  # type: ignore[attr-defined]
    s3.put_object(Bucket=src, Key="data/hello.txt",  # type: ignore[attr-defined]
                  Body=b"hello from the bucket\n")
    (skyc.cwd / "dataset").mkdir()
    (skyc.cwd / "dataset" / "train.csv").write_text("a,b\n1,2\n")
    (skyc.cwd / "dataset" / "scratch.tmp").write_text("not uploaded\n")
    (skyc.cwd / "dataset" / ".skyignore").write_text("*.tmp\n")
    skyc.write("st.yaml", TASK.format(src=src, ckpt=ckpt, ds=ds))

    plan = skyc.ok("plan", "st.yaml", "--format", "json")
    notes = {n["url"]: n for n in json.loads(plan.stdout)["notes"]["buckets"]}
    assert notes[f"s3://{ckpt}"]["action"] == "create"
    assert notes[f"s3://{ckpt}"]["persistent"] is False
    assert notes[f"s3://{src}/data"] == {
        "task": "st", "cluster": "st", "target": "~/copied", "url": f"s3://{src}/data",
        "store": "s3", "mode": "COPY", "action": "read", "persistent": True,
        "region": None, "storage_price": 0.023, "storage_price_basis": "default",
        "storage_gb": None, "monthly_storage_cost": None}
    assert f"bucket s3://{ckpt}: created, destroyed with st" in skyc.ok(
        "plan", "st.yaml").stdout

    run = skyc.ok("apply", "st.yaml", "--yes", timeout=600)
    assert run.stdout.count("hello from the bucket") == 4, str(run)  # 2 nodes, 2 mounts
    # the buckets exist before the cluster's stack is applied (its grants name them)
    said = " ".join(run.output.split())
    assert said.index(f"creating s3://{ckpt}") < said.index("provision"), said
    assert "used again" not in said  # made by this apply: not from before
    assert run.stdout.count("train.csv") == 2 and "scratch.tmp" not in run.stdout
    # MOUNT_CACHED: what the job wrote is in the bucket once apply has returned.
    assert _keys(s3, ckpt) == {"rank0.txt", "rank1.txt"}
    assert _keys(s3, ds) == {"train.csv", ".skyignore"}

    listed = json.loads(skyc.ok("storage", "ls", "--format", "json").stdout)
    assert {b["name"]: (b["persistent"], b["used_by"], b["status"])
            for b in listed["buckets"]} == {ckpt: (False, ["st"], "READY"),
                                           ds: (True, ["st"], "READY")}
    busy = skyc("storage", "delete", ds, "--yes")
    assert busy.returncode == 1 and f"bucket {ds} is in use by cluster(s) st" in busy.stderr
    assert skyc("storage", "delete", src, "--yes").returncode == 1  # never skyc's own

    again = skyc.ok("exec", "st", "st.yaml", timeout=600)  # the same YAML runs again
    assert f"s3://{ckpt} (created before; used again)" in again.output, str(again)
    assert again.stdout.count("hello from the bucket") == 4, str(again)
    going = subprocess.run(  # what `down` asks about besides the cluster
        [sys.executable, "-c", "from skyc.apply.bucket_jobs import buckets_going_with;"
         " print(buckets_going_with(['st']))"], env=skyc.env, cwd=skyc.cwd, text=True,
        capture_output=True, check=True)
    assert going.stdout.strip() == f"['s3://{ckpt} (holds data)']", going.stderr

    skyc.ok("down", "st", "--yes", timeout=300)
    assert _mounted_under(skyc.home) == []
    assert ckpt not in _buckets(s3) and {src, ds} <= _buckets(s3)
    listed = json.loads(skyc.ok("storage", "ls", "--format", "json").stdout)
    assert [(b["name"], b["used_by"]) for b in listed["buckets"]] == [(ds, [])]
    skyc.ok("storage", "delete", ds, "--yes", timeout=300)
    assert _buckets(s3) == {src}
    assert not (skyc.home / "storage" / ds).exists()
    leaked = [p for p in skyc.home.rglob("*") if p.is_file()
              and SECRET.encode() in p.read_bytes()]
    assert leaked == []


def test_a_missing_source_bucket_is_refused_before_anything_is_made(
        skyc: Skyc, moto: MotoServer) -> None:
    storage_user(skyc, moto)
    skyc.write("bad.yaml", "name: bad\nresources:\n  infra: local\nfile_mounts:\n"
               "  ~/d: s3://no-such-bucket-here/x\nrun: echo hi\n")
    out = skyc("apply", "bad.yaml", "--yes", timeout=300)
    assert out.returncode == 1, str(out)
    assert "file_mounts.~/d.source: s3://no-such-bucket-here/x does not exist" in out.stderr
    assert skyc.clusters() == []
    assert not (skyc.home / "clusters" / "bad" / "cluster.json").exists()
