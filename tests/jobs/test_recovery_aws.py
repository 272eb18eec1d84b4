"""A managed spot job on AWS (moto) loses its instance and recovers in the next region.

Real parts: `skyc jobs launch` and its controller as subprocesses, the terraform binary
and AWS provider against a moto server on 127.0.0.1 behind the fault proxy, and
OpenSSH sshd on loopback. What cannot exist here is the EC2 VM itself: moto runs no
machine, and its public addresses are off loopback. So each instance is given a
stand-in, a real sshd on 127.0.0.2x for the image's user, reached through skyc's own
SSH proxy-command feature (`aws: {ssh_proxy_command: ...}`, tests/support/ssh_proxy.py:
the first unseen instance address takes the next stand-in, whose user then accepts
that instance's key pair, as cloud-init would install it).

The preemption: the spot instance is terminated with boto3 behind skyc's back, and its
stand-in with it (sshd, sessions and every process killed, home wiped). The controller
must see the node stop answering, record RECOVERING with where and why, block the
region (EAGER_NEXT_REGION), re-target the same stack to the next region (where a
zone has no capacity: the fault proxy answers its RunInstances with EC2's error, so the
recovery fails over to the next zone), apply it, and run the job again on a fresh node,
which resumes from its checkpoint. boto3 then finds nothing that the final state does
not own while the job runs, and nothing at all once it has ended. Needs root (sshd,
useradd) and the provider mirror; one combined scenario, as each apply takes tens of
seconds.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import Skyc, wait_until
from tests.failover.aws_env import cloud_resources, leaks, live_instances, owned_ids
from tests.jobs.conftest import wait_for
from tests.support.fault_proxy import FaultProxy, FaultRule
from tests.support.moto_server import CREDENTIALS, MotoServer, start_moto
from tests.support.ssh_proxy import StandIns, stand_ins
from tests.support.terraform import (
    TERRAFORM_ENV,
    plugin_dir,
    requires_aws_provider,
    requires_terraform,
)

# The stand-in VMs are one Unix user (``ubuntu``): tests using them run one at a time,
# in one xdist worker (``--dist loadgroup``).
pytestmark = [pytest.mark.slow, pytest.mark.aws, requires_terraform, requires_aws_provider,
              pytest.mark.timeout(1800), pytest.mark.xdist_group("stand-in-vms")]

FIRST, NEXT = "us-east-2", "us-east-1"
CLUSTER = "skyc-job-1"


@pytest.fixture
def moto(tmp_path: Path) -> Iterator[MotoServer]:
    with start_moto(tmp_path / "moto.log") as server:
        yield server


@pytest.fixture
def proxy(moto: MotoServer) -> Iterator[FaultProxy]:
    with FaultProxy(upstream=moto.url) as running:
        yield running


@pytest.fixture
def vms(tmp_path: Path) -> Iterator[StandIns]:
    yield from stand_ins(tmp_path / "vms", 2)


@pytest.fixture
def checkpoints() -> Iterator[Path]:
    """A checkpoint root outside the nodes (and outside the 0700 pytest tree)."""
    path = Path(tempfile.mkdtemp(prefix="skyc-ckpt-"))
    path.chmod(0o777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _instance(moto: MotoServer, region: str) -> dict[str, Any]:
    [found] = [i for i in live_instances(moto, region)
               if {"Key": "skyc-cluster", "Value": CLUSTER} in i.get("Tags", [])]
    return found


def test_a_terminated_spot_instance_is_recovered_in_the_next_region(
        jobs: Skyc, moto: MotoServer, proxy: FaultProxy, vms: StandIns,
        checkpoints: Path) -> None:
    jobs.env.update({**CREDENTIALS, **TERRAFORM_ENV, "SKYC_JOBS_POLL_S": "1"})
    mirror = plugin_dir()
    if mirror:
        jobs.env["SKYC_TF_PLUGIN_DIR"] = mirror
    jobs.home.mkdir(parents=True, exist_ok=True)
    (jobs.home / "config.yaml").write_text(yaml.safe_dump({
        "infra": ["aws"],
        "aws": {"endpoint_url": proxy.url, "ssh_proxy_command": vms.proxy_command()},
    }))
    vms.tell_cloud(moto.url, [FIRST, NEXT])
    # The next region's cheapest zone has no capacity: its recovery fails over a zone.
    proxy.set_rules([FaultRule(code="InsufficientInstanceCapacity", zone="use1-az5")])
    jobs.write("train.yaml", f"""\
name: spot-train
resources:
  instance_type: inf1.xlarge
  use_spot: true
  disk_tier: low
  any_of:
    - infra: aws/{FIRST}
    - infra: aws/{NEXT}
run: |
  ckpt="{checkpoints}/$SKYPILOT_TASK_ID"
  mkdir -p "$ckpt"
  if [ -f "$ckpt/step" ]; then
    echo "resumed at step $(cat "$ckpt/step") on $(hostname)"
    while [ ! -f "{checkpoints}/go" ]; do sleep 0.5; done
    exit 0
  fi
  echo 7 > "$ckpt/step"
  sleep 900
""")
    jobs.ok("jobs", "launch", "train.yaml", "-y", "-d", timeout=300)
    first = wait_for(jobs, 1, lambda j: j["status"] == "RUNNING", timeout=600)
    assert wait_until(lambda: len(list(checkpoints.glob("*/step"))) == 1, timeout=120)
    assert first["trail"][-1]["data"]["infra"].startswith(f"aws/{FIRST}/"), first["trail"]
    lost = _instance(moto, FIRST)
    assert lost["InstanceLifecycle"] == "spot"
    assert vms.mapping() == {lost["PublicIpAddress"]: 0}

    # Preempted: the instance is terminated behind skyc's back, its machine with it.
    moto.client("ec2", FIRST).terminate_instances(InstanceIds=[lost["InstanceId"]])
    vms.terminate(0)

    second = wait_for(jobs, 1, lambda j: j["status"] in ("RUNNING", "FAILED",
                                                         "FAILED_NO_RESOURCE")
                      and len(j["attempts"]) == 2, timeout=900)
    assert second["status"] == "RUNNING", second
    [recovering] = [e for e in second["trail"] if e["status"] == "RECOVERING"]
    assert recovering["data"]["infra"].startswith(f"aws/{FIRST}/"), recovering
    assert "node head does not answer" in recovering["data"]["why"], recovering
    # ... and what the cloud says, read through the engine after the loss.
    assert "the cloud reports aws_instance.node_0 gone" in recovering["data"]["why"]
    assert second["trail"][-1]["data"]["infra"] == f"aws/{NEXT}/use1-az6", second["trail"]
    assert [h.request.zone_id for h in proxy.hits][:1] == ["use1-az5"]
    # The same job, on a fresh instance in the next region, reached through stand-in 1.
    again = _instance(moto, NEXT)
    assert vms.mapping()[again["PublicIpAddress"]] == 1
    assert live_instances(moto, FIRST) == []
    # While it runs, boto3 finds nothing that the cluster's state does not own.
    assert leaks(moto, owned_ids(jobs.home, CLUSTER)) == {}

    (checkpoints / "go").touch()
    done = wait_for(jobs, 1, lambda j: j["status"] in ("SUCCEEDED", "FAILED"), timeout=600)
    assert done["status"] == "SUCCEEDED", done
    assert done["id"] == 1 and done["recoveries"] == 1
    assert [e["status"] for e in done["trail"]].count("RECOVERING") == 1
    assert done["attempts"][0]["outcome"].startswith("PREEMPTED"), done["attempts"]
    assert "resumed at step 7" in jobs.ok("jobs", "logs", "1").stdout
    # The job ended: its cluster is gone, and nothing at all is left in either region.
    assert jobs.clusters() == []
    assert {k: v for k, v in cloud_resources(moto).items() if v} == {}
