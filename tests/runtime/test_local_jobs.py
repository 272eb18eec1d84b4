"""Jobs on a 2-node local cluster: real subprocesses, each node with its own home directory."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from skyc.errors import JobFailed, UnsupportedFeature
from skyc.model.nodes import ClusterInfo
from skyc.runtime import JobSpec, cancel, queue, run_job, tail_logs, wait_for_nodes


def collect() -> tuple[list[tuple[str, str]], object]:
    lines: list[tuple[str, str]] = []

    def on_line(label: str, line: str) -> None:
        lines.append((label, line))

    return lines, on_line


def test_setup_and_run_on_two_nodes_with_env(local_cluster: ClusterInfo, tmp_path: Path,
                                             skyc_home: Path) -> None:
    workdir = tmp_path / "wd"
    workdir.mkdir()
    (workdir / "train.py").write_text("print('training')\n")
    spec = JobSpec(
        name="train", workdir=str(workdir), num_gpus_per_node=0,
        setup='echo "setup rank=$SKYPILOT_SETUP_NODE_RANK ips=$(echo $SKYPILOT_SETUP_NODE_IPS)"',
        run=('echo "rank=$SKYPILOT_NODE_RANK num=$SKYPILOT_NUM_NODES skyc=$SKYC_NODE_RANK '
             'gpus=$SKYPILOT_NUM_GPUS_PER_NODE home=$HOME pwd=$(pwd)"; '
             'echo "task=$SKYPILOT_TASK_ID"; echo "info=$SKYPILOT_CLUSTER_INFO"; '
             'echo "greet=$GREETING secret_len=${#TOKEN}"; python3 train.py'),
        envs={"GREETING": "hello"}, secrets={"TOKEN": "s3cr3t-value"})
    lines, on_line = collect()
    result = run_job(local_cluster, spec, on_line=on_line)  # type: ignore[arg-type]
    assert result.status == "SUCCEEDED" and result.exit_code == 0
    assert [n.exit_code for n in result.nodes] == [0, 0]
    by_node: dict[str, list[str]] = {}
    for label, line in lines:
        by_node.setdefault(label, []).append(line)
    assert set(by_node) == {"(head, rank=0)", "(worker1, rank=1, ip=127.0.0.1)"}
    head = by_node["(head, rank=0)"]
    worker = by_node["(worker1, rank=1, ip=127.0.0.1)"]
    assert "setup rank=0 ips=127.0.0.1 127.0.0.1" in head
    assert "setup rank=1 ips=127.0.0.1 127.0.0.1" in worker
    node0 = local_cluster.nodes[0].node_dir
    assert f"rank=0 num=2 skyc=0 gpus=0 home={node0} pwd={node0}/sky_workdir" in head
    assert any(line.startswith("rank=1 num=2 skyc=1") for line in worker)
    assert "greet=hello secret_len=12" in head and "training" in worker
    info = json.loads(next(ln for ln in head if ln.startswith("info="))[5:])
    assert info == {"cloud": "local", "cluster": "loc", "region": None, "zone": None}
    task_id = next(ln for ln in head if ln.startswith("task="))
    assert task_id.endswith(f"_loc_{result.job_id}")
    # saved locally, prefixed; the secret is nowhere on disk
    # each node's output is stored once, as it came
    job_logs = skyc_home / "logs" / "loc" / str(result.job_id)
    assert sorted(p.name for p in job_logs.iterdir()) == [
        "head.log", "head.setup.log", "worker1.log", "worker1.setup.log"]
    assert "training" in (job_logs / "worker1.log").read_text().splitlines()
    for root in (skyc_home, tmp_path / "node0", tmp_path / "node1", tmp_path / "workspace"):
        for path in root.rglob("*"):
            if path.is_file():
                assert b"s3cr3t-value" not in path.read_bytes(), path
    table = json.loads((skyc_home / "logs" / "loc" / "jobs.json").read_text())
    assert table[-1]["status"] == "SUCCEEDED" and table[-1]["job_id"] == result.job_id


def test_setup_runs_once_per_setup_text(local_cluster: ClusterInfo) -> None:
    spec = JobSpec(setup="echo ran >> ~/setup_count", run="cat ~/setup_count | wc -l")
    lines, on_line = collect()
    run_job(local_cluster, spec)
    run_job(local_cluster, spec, on_line=on_line)  # type: ignore[arg-type]
    assert ("(head, rank=0)", "1") in lines
    lines.clear()
    run_job(local_cluster, spec, on_line=on_line, rerun_setup=True)  # type: ignore[arg-type]
    assert ("(head, rank=0)", "2") in lines
    lines.clear()
    spec2 = JobSpec(setup="echo ran >> ~/setup_count  # changed", run="cat ~/setup_count | wc -l")
    run_job(local_cluster, spec2, on_line=on_line)  # type: ignore[arg-type]
    assert ("(head, rank=0)", "3") in lines


def test_failing_node_exit_code_and_others_stopped(local_cluster: ClusterInfo) -> None:
    spec = JobSpec(run='if [ "$SKYPILOT_NODE_RANK" = 1 ]; then sleep 0.5; exit 3; fi; '
                       'echo $$ > ~/pid; sleep 60')
    started = time.monotonic()
    result = run_job(local_cluster, spec)
    assert time.monotonic() - started < 30
    assert result.status == "FAILED"
    assert result.failed_node == "worker1"
    assert result.exit_code == 3
    codes = {n.node: n.exit_code for n in result.nodes}
    assert codes["worker1"] == 3 and codes["head"] not in (0, None)
    head_pid = int(Path(local_cluster.nodes[0].node_dir or "", "pid").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(head_pid, 0)
    with pytest.raises(JobFailed) as err:
        result.raise_for_status()
    assert err.value.exit_code == 3
    assert "worker1 (rank=1)" in str(err.value) and "code 3" in str(err.value)
    jobs = queue(local_cluster)
    assert jobs[-1]["status"] == "FAILED"
    assert jobs[-1]["nodes"] == {"head": "CANCELLED", "worker1": "FAILED"}


def test_setup_failure_stops_before_run(local_cluster: ClusterInfo) -> None:
    result = run_job(local_cluster, JobSpec(setup="exit 7", run="touch ~/ran"))
    assert result.status == "FAILED_SETUP" and result.exit_code == 7
    assert not Path(local_cluster.nodes[0].node_dir or "", "ran").exists()


def test_detach_queue_tail_cancel(local_cluster: ClusterInfo) -> None:
    spec = JobSpec(name="long", run="echo started; sleep 60")
    result = run_job(local_cluster, spec, detach=True)
    assert result.status == "RUNNING"
    jobs = queue(local_cluster)
    assert jobs[-1]["job_id"] == result.job_id and jobs[-1]["status"] == "RUNNING"
    lines, on_line = collect()
    deadline = time.monotonic() + 10
    while not lines and time.monotonic() < deadline:
        code = tail_logs(local_cluster, result.job_id, follow=False,
                         on_line=on_line)  # type: ignore[arg-type]
        assert code == -1  # still running
    assert ("(head, rank=0)", "started") in lines
    assert cancel(local_cluster, result.job_id) is True
    jobs = queue(local_cluster)
    assert jobs[-1]["status"] == "CANCELLED"
    assert tail_logs(local_cluster, result.job_id, follow=True) not in (0, -1)


def test_job_ids_increase(local_cluster: ClusterInfo) -> None:
    ids = [run_job(local_cluster, JobSpec(run="true")).job_id for _ in range(3)]
    assert ids == sorted(ids) and len(set(ids)) == 3
    # cancelling a finished job changes nothing
    assert cancel(local_cluster, ids[0]) is False
    assert queue(local_cluster)[0]["status"] == "SUCCEEDED"


def test_wait_for_nodes_reports_facts(local_cluster: ClusterInfo) -> None:
    facts = wait_for_nodes(local_cluster, timeout=30)
    assert set(facts) == {"head", "worker1"}
    assert facts["head"]["accelerators"]["vendor"] == "none"  # no GPU on this machine


def test_bucket_mount_is_unsupported() -> None:
    with pytest.raises(UnsupportedFeature, match=r"file_mounts\./data"):
        JobSpec(file_mounts={"/data": "s3://bucket/path"})


def test_file_mounts(local_cluster: ClusterInfo, tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "d").mkdir(parents=True)
    (src / "d" / "x.txt").write_text("x")
    (src / "one.cfg").write_text("cfg")
    abs_target = tmp_path / "abs_target"
    spec = JobSpec(file_mounts={"data": str(src / "d"), "~/conf/one.cfg": str(src / "one.cfg"),
                                str(abs_target): str(src / "d")},
                   run="cat ~/data/x.txt ~/conf/one.cfg")
    lines, on_line = collect()
    result = run_job(local_cluster, spec, on_line=on_line)  # type: ignore[arg-type]
    assert result.ok
    assert ("(head, rank=0)", "xcfg") in lines
    assert (abs_target / "x.txt").read_text() == "x"
    # a changed single-file mount is uploaded again, an unchanged one is left alone
    (src / "one.cfg").write_text("cfg2")
    lines.clear()
    assert run_job(local_cluster, spec, on_line=on_line).ok  # type: ignore[arg-type]
    assert ("(worker1, rank=1, ip=127.0.0.1)", "xcfg2") in lines
