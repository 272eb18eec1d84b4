"""Jobs over real OpenSSH servers on 127.0.0.2 and 127.0.0.3, one Unix user per node."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from skyc.errors import TransportError
from skyc.runtime import JobSpec, queue, run_job, wait_for_nodes
from tests.support.sshd import SshdCluster

pytestmark = pytest.mark.slow


def test_two_node_job_sees_ranks_and_ips(sshd2: SshdCluster, tmp_path: Path) -> None:
    cluster = sshd2.cluster_info()
    workdir = tmp_path / "wd"
    workdir.mkdir()
    (workdir / "hello.txt").write_text("hi from workdir\n")
    lines: list[tuple[str, str]] = []
    spec = JobSpec(run='echo "rank=$SKYPILOT_NODE_RANK ips=$(echo $SKYPILOT_NODE_IPS) '
                       'user=$(whoami)"; cat hello.txt')
    result = run_job(cluster, spec.model_copy(update={"workdir": str(workdir)}),
                     on_line=lambda label, line: lines.append((label, line)))
    assert result.status == "SUCCEEDED"
    head, worker = sshd2.nodes
    assert ("(head, rank=0)",
            f"rank=0 ips=127.0.0.2 127.0.0.3 user={head.user}") in lines
    assert ("(worker1, rank=1, ip=127.0.0.3)",
            f"rank=1 ips=127.0.0.2 127.0.0.3 user={worker.user}") in lines
    assert lines.count(("(worker1, rank=1, ip=127.0.0.3)", "hi from workdir")) == 1
    assert (worker.home / "sky_workdir" / "hello.txt").exists()
    # host keys were pinned on first connect
    pinned = (Path(cluster.workspace) / "known_hosts").read_text().splitlines()
    assert sorted(ln.split()[0] for ln in pinned) == sorted(
        f"[{n.host}]:{n.port}" for n in sshd2.nodes)
    # the agent is uploaded once per version
    agents = list((head.home / ".skyc").glob("agent_*.py"))
    assert len(agents) == 1
    before = agents[0].stat().st_mtime_ns
    assert queue(cluster)[-1]["status"] == "SUCCEEDED"
    assert agents[0].stat().st_mtime_ns == before


def test_changed_host_key_is_refused(sshd2: SshdCluster) -> None:
    cluster = sshd2.cluster_info()
    wait_for_nodes(cluster, timeout=30)  # pins both keys
    worker = sshd2.nodes[1]
    sshd2.new_host_key(worker)
    sshd2.restart(worker)
    with pytest.raises(TransportError) as err:
        wait_for_nodes(cluster, timeout=30)
    assert "worker1" in str(err.value) and "host key does not match" in str(err.value)
    assert err.value.hint and "known_hosts" in str(err.value) + err.value.hint


def _job_alive(home: Path, job_id: int) -> bool:
    pgid = int((home / ".skyc" / "jobs" / str(job_id) / "run.pgid").read_text())
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def test_node_dying_mid_run_fails_the_job(sshd2: SshdCluster) -> None:
    cluster = sshd2.cluster_info()
    head, worker = sshd2.nodes
    seen = threading.Event()

    def on_line(label: str, line: str) -> None:
        if line == "working" and "worker1" in label:
            seen.set()

    def kill_worker() -> None:
        assert seen.wait(60)
        sshd2.kill_node(worker)

    killer = threading.Thread(target=kill_worker)
    killer.start()
    started = time.monotonic()
    result = run_job(cluster, JobSpec(run="echo working; sleep 120"), on_line=on_line)
    killer.join()
    assert time.monotonic() - started < 60
    assert result.status == "FAILED"
    assert result.failed_node == "worker1"
    worker_result = next(n for n in result.nodes if n.node == "worker1")
    assert worker_result.exit_code is None
    assert worker_result.error and "connection lost" in worker_result.error
    message = result.describe_failure()
    assert "worker1 (rank=1)" in message and "connection lost" in message
    assert result.exit_code == 255
    # the head's job was stopped: its process group is gone
    assert not _job_alive(head.home, result.job_id)


def test_wait_for_nodes_retries_while_a_node_boots(sshd2: SshdCluster) -> None:
    cluster = sshd2.cluster_info()
    worker = sshd2.nodes[1]
    sshd2.stop_listener(worker)
    with pytest.raises(TransportError, match=r"worker1.*cannot connect over SSH"):
        wait_for_nodes(cluster, timeout=2)
    timer = threading.Timer(2.0, sshd2.restart, args=(worker,))
    timer.start()
    try:
        started = time.monotonic()
        facts = wait_for_nodes(cluster, timeout=60)
        assert time.monotonic() - started >= 1.5
    finally:
        timer.join()
    assert set(facts) == {"head", "worker1"}
    assert facts["worker1"]["accelerators"]["vendor"] == "none"  # no GPU on this machine
