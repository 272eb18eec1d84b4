"""A managed job whose cluster is lost mid-run resumes from the checkpoint it wrote to a
bucket: real `skyc` processes on the `local` infra, the bucket created by skyc (its
stack applied with terraform against a real moto server on 127.0.0.1), mounted with
MOUNT_CACHED through rclone and FUSE on each attempt's cluster. The loss is every
process of the head node SIGKILLed (rclone's too), once the checkpoint is in the
bucket; the recovered run, on a new cluster, reads it back through a new mount."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import Skyc, wait_until
from tests.jobs.conftest import kill_node, wait_for
from tests.support.moto_server import MotoServer, start_moto
from tests.support.storage import FUSE_UNAVAILABLE, USER_SECRET, storage_user, user_s3
from tests.support.terraform import requires_aws_provider, requires_terraform

pytestmark = [pytest.mark.slow, pytest.mark.aws, requires_terraform, requires_aws_provider,
              pytest.mark.skipif(FUSE_UNAVAILABLE is not None,
                                 reason=FUSE_UNAVAILABLE or "")]


@pytest.fixture
def moto(tmp_path: Path) -> Iterator[MotoServer]:
    with start_moto(tmp_path / "moto.log", skyc_amis=False, front=False) as server:
        yield server


TRAIN = """\
name: train
resources:
  infra: local
  job_recovery:
    strategy: EAGER_NEXT_REGION
file_mounts:
  ~/ckpt:
    name: {bucket}
    mode: MOUNT_CACHED
    persistent: false
run: |
  if [ -f ~/ckpt/step ]; then echo "resumed at step $(cat ~/ckpt/step)"; exit 0; fi
  echo 7 > ~/ckpt/step
  echo started
  sleep 600
"""


def test_a_lost_cluster_resumes_from_the_checkpoint_in_its_bucket(
        jobs: Skyc, moto: MotoServer) -> None:
    storage_user(jobs, moto)
    s3 = user_s3(moto)
    bucket = f"ckpt-{uuid.uuid4().hex[:8]}"
    jobs.write("train.yaml", TRAIN.format(bucket=bucket))
    jobs.ok("jobs", "launch", "train.yaml", "-y", "-d", timeout=300)
    wait_for(jobs, 1, lambda j: j["status"] == "RUNNING", timeout=300)

    def in_bucket() -> bool:
        listed = s3.list_objects_v2(Bucket=bucket)  # type: ignore[attr-defined]
        return [o["Key"] for o in listed.get("Contents", [])] == ["step"]

    assert wait_until(in_bucket, timeout=60)
    assert kill_node(jobs.workspace("skyc-job-1") / "nodes" / "head") > 0

    done = wait_for(jobs, 1, lambda j: j["status"] in ("SUCCEEDED", "FAILED"), timeout=400)
    assert done["status"] == "SUCCEEDED", done
    assert done["recoveries"] == 1 and len(done["attempts"]) == 2
    assert "resumed at step 7" in jobs.ok("jobs", "logs", "1").stdout
    # The bucket went with the job's cluster once the job ended (not persistent).
    names = {b["Name"] for b in s3.list_buckets()["Buckets"]}  # type: ignore[attr-defined]
    assert bucket not in names
    assert jobs.ok("storage", "ls").stdout.startswith("no buckets")
    assert not [p for p in jobs.home.rglob("*") if p.is_file()
                and USER_SECRET.encode() in p.read_bytes()]
