"""A managed job on an SSH pool of two real sshd nodes on loopback (one Unix user per
node, tests/support/sshd.py; skips when not root): every process of the head node's
user is SIGKILLed mid-run (a simulated preemption: its sessions and the job's agent
supervisor too), and the controller recovers onto the pool and completes the job."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import Skyc, wait_until
from tests.jobs.conftest import wait_for
from tests.support.sshd import SshdCluster, sshd_cluster


@pytest.fixture
def pool(tmp_path: Path) -> Iterator[SshdCluster]:
    yield from sshd_cluster(tmp_path / "sshd", 2)


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A checkpoint root both node users can write (outside the 0700 pytest tree)."""
    path = Path(tempfile.mkdtemp(prefix="skyc-ckpt-"))
    path.chmod(0o777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _kill_user(uid: int) -> int:
    killed = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            if os.stat(f"/proc/{name}").st_uid == uid:
                os.kill(int(name), signal.SIGKILL)
                killed += 1
        except OSError:
            continue
    return killed


def test_a_killed_ssh_node_is_recovered_and_the_job_resumes_from_its_checkpoint(
        jobs: Skyc, pool: SshdCluster, shared_dir: Path) -> None:
    hosts = [f"{n.user}@{n.host}:{n.port}" for n in pool.nodes]
    jobs.home.mkdir(parents=True, exist_ok=True)
    (jobs.home / "config.yaml").write_text(yaml.safe_dump({"ssh_pools": {"lab": {
        "hosts": hosts, "identity_file": str(pool.workspace / "id_ed25519"),
    }}}))
    jobs.write("train.yaml", f"""\
name: lab-train
num_nodes: 2
resources:
  infra: ssh/lab
run: |
  ckpt="{shared_dir}/$SKYPILOT_TASK_ID"
  if [ -f "$ckpt/step" ]; then echo "resumed at step $(cat "$ckpt/step")"; exit 0; fi
  if [ "$SKYPILOT_NODE_RANK" = 0 ]; then
    (umask 000 && mkdir -p "$ckpt" && echo 3 > "$ckpt/step.tmp" && mv "$ckpt/step.tmp" "$ckpt/step")
  fi
  sleep 600
""")
    jobs.ok("jobs", "launch", "train.yaml", "-y", "-d")
    wait_for(jobs, 1, lambda j: j["status"] == "RUNNING", timeout=120)
    # Only the rank-0 node writes the checkpoint (both node users can read it:
    # umask 000), so the two nodes never race to create and chmod one directory.
    wrote = wait_until(lambda: len(list(shared_dir.glob("*/step"))) == 1, timeout=60)
    assert wrote, (str(jobs("jobs", "logs", "1", timeout=30))[-3000:]
                   + str(jobs("jobs", "logs", "1", "--controller", timeout=30))[-3000:])
    head = pool.nodes[0]
    assert _kill_user(head.uid) > 0

    done = wait_for(jobs, 1, lambda j: j["status"] in ("SUCCEEDED", "FAILED"), timeout=240)

    assert done["status"] == "SUCCEEDED", done
    trail = [e["status"] for e in done["trail"]]
    assert trail.count("RECOVERING") == 1, trail
    assert done["id"] == 1 and len(done["attempts"]) == 2
    assert "resumed at step 3" in jobs.ok("jobs", "logs", "1").stdout
    assert jobs.clusters() == []
