"""Waiting for new nodes: a late sshd, one that never starts, the bootstrap's marker, a
wrong key. Real OpenSSH sshd on loopback (tests/support/sshd.py), a node's sshd held
back as a booting machine's is; skips when not root.

A cluster is new when its workspace's ``cluster.json`` (written by apply or start) has
no boot record: the tests write that file as apply does. Nothing is mocked; the
bootstrap's marker is the file its last line writes, written by the test in its
place (no VM runs the bootstrap here).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from skyc.errors import TransportError
from skyc.model.nodes import CLUSTER_FILE, ClusterInfo
from skyc.runtime import JobSpec, run_job, wait_for_boot
from skyc.runtime.boot_record import READY_MARKER, elapsed, plan_boot
from tests.support.sshd import SshdCluster, sshd_cluster

pytestmark = pytest.mark.slow


def _boot_timeout(home: Path, seconds: float) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(yaml.safe_dump({"provision": {"boot_timeout": seconds}}))


def _applied(info: ClusterInfo) -> ClusterInfo:
    """As apply leaves a cluster: its nodes in ``cluster.json`` (so they are new)."""
    (Path(info.workspace) / CLUSTER_FILE).write_text(info.model_dump_json())
    return info


@pytest.fixture
def late_worker(tmp_path: Path, skyc_home: Path) -> Iterator[SshdCluster]:
    """Two nodes; the worker's sshd is not started (the test starts it, or never)."""
    yield from sshd_cluster(tmp_path / "sshd", 2, held=[1])


@pytest.fixture
def held_node(tmp_path: Path, skyc_home: Path) -> Iterator[SshdCluster]:
    """One node whose sshd is not started (the test starts it)."""
    yield from sshd_cluster(tmp_path / "sshd", 1, held=[0])


@pytest.fixture
def one_node(tmp_path: Path, skyc_home: Path) -> Iterator[SshdCluster]:
    yield from sshd_cluster(tmp_path / "sshd", 1)


def test_a_new_node_whose_sshd_starts_late_is_waited_for(
        late_worker: SshdCluster, skyc_home: Path) -> None:
    _boot_timeout(skyc_home, 30)
    info = _applied(late_worker.cluster_info())
    progress: list[tuple[float, str]] = []
    seen: dict[str, float] = {}

    def on_line(label: str, line: str) -> None:
        seen.setdefault(label.split(",")[0].strip("("), time.monotonic())

    late = late_worker.launch_later(late_worker.nodes[1], 4.0)
    try:
        result = run_job(info, JobSpec(run="echo up"), on_line=on_line,
                         on_wait=lambda text: progress.append((time.monotonic(), text)))
    finally:
        late.cancel()
        late.join()
    assert result.status == "SUCCEEDED", result
    assert late.listening is not None and set(seen) == {"head", "worker1"}
    # Picked up within a couple of seconds of listening, not after a long poll.
    assert seen["worker1"] - late.listening < 2.5, seen["worker1"] - late.listening
    texts = [t for _, t in progress]
    assert texts and all(t.startswith("waiting for SSH on node worker1 (") for t in texts)
    assert "connection refused" in texts[0]
    assert not any("head" in t for t in texts)  # the head answered at once
    # Found up: the next session does not wait for these nodes; a new apply (the
    # cluster's nodes written again) makes them new again.
    assert plan_boot(info) is None
    (Path(info.workspace) / CLUSTER_FILE).write_text(info.model_dump_json())
    again = plan_boot(info)
    assert again is not None and again.fresh == {"head", "worker1"} and again.timeout == 30


def test_an_apply_without_a_job_can_wait_for_its_new_nodes(
        held_node: SshdCluster, skyc_home: Path) -> None:
    info = _applied(held_node.cluster_info())
    progress: list[str] = []
    late = held_node.launch_later(held_node.nodes[0], 1.5)
    started = time.monotonic()
    try:
        wait_for_boot(info, on_wait=progress.append)
    finally:
        late.cancel()
        late.join()
    assert late.listening is not None and time.monotonic() >= late.listening
    assert time.monotonic() - started < 4.5
    assert progress and progress[0].startswith("waiting for SSH on node head (1s")
    assert plan_boot(info) is None
    wait_for_boot(info)  # nothing new: returns at once


def test_a_cloud_node_is_waited_for_until_its_bootstrap_has_finished(
        one_node: SshdCluster, skyc_home: Path) -> None:
    node = one_node.nodes[0]
    # An AWS cluster: its nodes run skyc's bootstrap, whose last line writes the marker.
    info = _applied(one_node.cluster_info().model_copy(update={"cloud": "aws"}))
    marker = node.home / READY_MARKER
    written: list[float] = []

    def boot_finishes() -> None:
        time.sleep(3.0)
        marker.parent.mkdir(exist_ok=True)
        shutil.chown(marker.parent, node.user, node.user)
        marker.touch()
        written.append(time.monotonic())

    progress: list[str] = []
    first: list[float] = []
    finisher = threading.Thread(target=boot_finishes)
    finisher.start()
    try:
        result = run_job(info, JobSpec(run="echo up"), on_wait=progress.append,
                         on_line=lambda label, line: first.append(time.monotonic()))
    finally:
        finisher.join()
    assert result.status == "SUCCEEDED", result
    assert first and first[0] > written[0]
    assert first[0] - written[0] < 2.5  # the marker is polled often
    assert progress and all(p.startswith("waiting for node head to finish booting (")
                            for p in progress), progress
    assert plan_boot(info) is None


def test_a_wrong_key_is_not_retried_for_minutes(
        one_node: SshdCluster, skyc_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    node = one_node.nodes[0]
    other = one_node.root / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)],
                   check=True)
    (node.home / ".ssh" / "authorized_keys").write_text(
        other.with_suffix(".pub").read_text())
    info = one_node.cluster_info()

    def fails_in(limit: float) -> TransportError:
        started = time.monotonic()
        with pytest.raises(TransportError) as err:
            run_job(info, JobSpec(run="true"))
        assert time.monotonic() - started < limit
        return err.value

    # A running cluster: refused at once, not retried for CONNECT_TIMEOUT (60 s).
    error = fails_in(5)
    assert "head" in str(error) and "refused the key" in str(error)
    assert error.hint and "authorized_keys" in error.hint
    # A new node is given a grace (its key may come a little after sshd), then the same.
    _boot_timeout(skyc_home, 600)
    _applied(info)
    monkeypatch.setattr("skyc.runtime.boot.AUTH_GRACE_S", 1.0)
    assert "refused the key" in str(fails_in(8))


def test_elapsed_reads_as_minutes_and_seconds() -> None:
    assert [elapsed(s) for s in (3, 59.4, 130, 600, 3725)] == [
        "3s", "59s", "2m10s", "10m00s", "1h02m"]


# -- through the CLI: a clean error, exit non-zero, no traceback ----------------------


def _exec_env(home: Path) -> dict[str, str]:
    repo = Path(__file__).resolve().parents[2]
    return {**os.environ, "SKYC_HOME": str(home), "PYTHONPATH": str(repo), "NO_COLOR": "1",
            "COLUMNS": "300"}


def _as_applied_cluster(cluster: SshdCluster, home: Path) -> Path:
    """The sshd nodes as an applied AWS cluster in SKYC_HOME (``skyc exec`` finds it),
    its head booted (its bootstrap's marker written)."""
    head = cluster.nodes[0]
    (head.home / ".skyc").mkdir()
    (head.home / READY_MARKER).touch()
    shutil.chown(head.home / ".skyc", head.user, head.user)
    workspace = home / "clusters" / "boot"
    workspace.mkdir(parents=True)
    shutil.copy(cluster.workspace / "id_ed25519", workspace / "id_ed25519")
    info = cluster.cluster_info("boot").model_copy(
        update={"cloud": "aws", "workspace": str(workspace)})
    _applied(info)
    return workspace


def _check_clean(stderr: str, code: int) -> None:
    assert "Traceback" not in stderr, stderr
    assert code != 0
    assert "worker1: cannot connect over SSH: connection refused" in stderr, stderr
    assert "head:" not in stderr  # the head came up
    assert "cluster boot" in stderr and "it is still running (and billing)" in stderr
    assert "skyc down boot" in stderr and "skyc apply" in stderr and "skyc exec boot" in stderr


def test_exec_on_a_node_that_never_starts_ends_with_a_clean_error(
        late_worker: SshdCluster, skyc_home: Path) -> None:
    _boot_timeout(skyc_home, 3)
    _as_applied_cluster(late_worker, skyc_home)
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "skyc", "exec", "boot", "--num-nodes", "2",
                           "echo hi"], env=_exec_env(skyc_home), capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert time.monotonic() - started < 20
    _check_clean(done.stderr, done.returncode)
    assert "cluster boot: node worker1 did not come up within 3s" in done.stderr
    assert "hi" not in done.stdout


def test_ctrl_c_while_waiting_ends_with_a_clean_error(
        late_worker: SshdCluster, skyc_home: Path) -> None:
    import signal

    _boot_timeout(skyc_home, 60)
    workspace = _as_applied_cluster(late_worker, skyc_home)
    proc = subprocess.Popen([sys.executable, "-m", "skyc", "exec", "boot",
                             "--num-nodes", "2", "echo hi"],
                            env=_exec_env(skyc_home), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    try:
        # The head answered (its host key is pinned): the worker is being waited for.
        deadline = time.monotonic() + 30
        while not (workspace / "known_hosts").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, stderr
    assert "interrupted while waiting for new nodes of cluster boot" in stderr
    _check_clean(stderr, proc.returncode)
