"""The jobs controller on a controller cluster on an SSH pool: one real sshd node on
loopback with its own Unix user (tests/support/sshd.py; skips when not root). skyc
ships itself there and runs the controller as that user, with that user's own
SKYC_HOME; the managed job runs on the ``local`` target of the controller's node.

The node's Python is this machine's ``/usr/bin/python3``; skyc's dependencies are put
in the node user's site-packages first (hard links to this interpreter's installed
files), as a machine image with them installed would have them: this machine cannot
reach PyPI, so the ``pip install --user`` path is not exercised here."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import Skyc
from tests.jobs.conftest import queue, wait_for
from tests.support.node_image import give_packages, node_python_missing
from tests.support.sshd import SshdCluster, sshd_cluster

SECRET = "s3cr3t-ssh-ctl-41d0"


@pytest.fixture
def pool(tmp_path: Path) -> Iterator[SshdCluster]:
    if why := node_python_missing():
        pytest.skip(why)
    yield from sshd_cluster(tmp_path / "sshd", 1)


def _files_holding(root: Path, needle: str) -> list[Path]:
    found = []
    for path in root.rglob("*"):
        try:
            if path.is_file() and not path.is_symlink() and needle.encode() in path.read_bytes():
                found.append(path)
        except OSError:
            continue
    return found


def test_a_job_on_an_ssh_controller_cluster_survives_the_client_and_is_forwarded(
        jobs: Skyc, pool: SshdCluster, tmp_path: Path) -> None:
    node = pool.nodes[0]
    give_packages(node.home, "skyc")  # skyc's dependencies, as its image would
    jobs.home.mkdir(parents=True, exist_ok=True)
    (jobs.home / "config.yaml").write_text(yaml.safe_dump({
        "ssh_pools": {"ctl": {"hosts": [f"{node.user}@{node.host}:{node.port}"],
                              "identity_file": str(pool.workspace / "id_ed25519")}},
        "jobs": {"controller": {"infra": "ssh/ctl"}},
    }))
    jobs.write("src/step.sh", "echo step-from-the-workdir\n")
    jobs.write("train.yaml", """\
name: ssh-ctl-train
workdir: src
resources:
  infra: local
secrets:
  API_TOKEN: null
run: |
  echo "running as $(id -un), token of ${#API_TOKEN} characters"
  bash step.sh
  sleep 8
  echo done-training
""")
    launched = jobs.ok("jobs", "launch", "train.yaml", "-y", "-d",
                       "--secret", f"API_TOKEN={SECRET}", timeout=300)
    assert launched.stdout.strip() == "1"
    names = jobs.clusters()
    assert len(names) == 1 and names[0].startswith("skyc-jobs-controller-"), names
    name = names[0]
    # The client is gone; the job runs on the controller's node, as its user.
    running = wait_for(jobs, 1, lambda j: j["status"] in ("RUNNING", "SUCCEEDED"),
                       timeout=120)
    if running["status"] == "RUNNING":  # supervised by a process of the node's user
        assert os.stat(f"/proc/{running['controller_pid']}").st_uid == node.uid
    followed = jobs.ok("jobs", "logs", "1", "--follow", timeout=180)
    assert f"running as {node.user}, token of {len(SECRET)} characters" in followed.stdout
    assert "done-training" in followed.stdout
    assert "step-from-the-workdir" in followed.stdout
    done = queue(jobs)[0]
    assert done["status"] == "SUCCEEDED", done

    remote_home = node.home / ".skyc-controller" / "home"
    assert (remote_home / "state.db").exists()
    assert not (remote_home / "clusters" / "skyc-job-1" / "cluster.json").exists()
    assert (jobs.workspace(name) / "main.tf.json").is_file()
    assert "jobs-controller" in (jobs.workspace(name) / "main.tf.json").read_text()
    assert _files_holding(tmp_path, SECRET) == []
    assert _files_holding(node.home / ".skyc-controller", SECRET) == []

    # A controller that does not answer is a clear error naming it and the way back.
    pool.stop_listener(node)
    result = jobs("jobs", "queue", timeout=120)
    assert result.returncode == 1 and "Traceback" not in result.output, str(result)
    assert f"the jobs controller cluster {name} is not reachable" in result.stderr
    assert "skyc jobs controller-up" in result.stderr
    pool.restart(node)
    assert queue(jobs)[0]["status"] == "SUCCEEDED"
