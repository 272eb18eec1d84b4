"""Processes, locks and job records on a real 2-node local cluster, as a user drives it."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import tracemalloc
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from skyc.errors import SkycError
from skyc.model.nodes import ClusterInfo
from skyc.runtime import JobSpec, queue, run_job
from skyc.runtime.agent import MARK_VAR
from skyc.state.database import ClusterRecord, StateDB
from tests.runtime.test_cli_jobs import save_cluster, skyc


def marked_processes() -> list[int]:
    """Every process on this machine carrying a skyc job mark."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            environ = Path(f"/proc/{name}/environ").read_bytes()
        except OSError:
            continue
        if f"{MARK_VAR}=".encode() in environ:
            found.append(int(name))
    return found


def marks_of(cluster: ClusterInfo) -> list[int]:
    import hashlib

    tokens = []
    for node in cluster.nodes:
        home = os.path.realpath(os.path.join(node.node_dir or "", ".skyc"))
        tokens.append(hashlib.sha256(home.encode()).hexdigest()[:16])
    found = []
    for pid in marked_processes():
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
        if any(f"{MARK_VAR}={t}/".encode() in environ for t in tokens):
            found.append(pid)
    return found


def wait_until(check: object, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return True
        time.sleep(0.1)
    return False


def register(home: Path, cluster: ClusterInfo, accelerators: dict[str, int] | None = None
             ) -> None:
    save_cluster(home, cluster)
    with StateDB() as db:
        db.upsert_cluster(ClusterRecord(
            name=cluster.name, status="UP", cloud="local",
            placement={"num_nodes": len(cluster.nodes), "accelerators": accelerators or {}},
            nodes=[n.model_dump(mode="json") for n in cluster.nodes]))


DAEMON_JOB = ("setsid bash -c 'sleep 300' < /dev/null > /dev/null 2>&1 & "
              "sleep 300 & echo started; wait")


def test_stop_all_ends_every_job_process_daemons_included(local_cluster: ClusterInfo) -> None:
    from skyc.runtime import cancel, stop_all_jobs

    first = run_job(local_cluster, JobSpec(run=DAEMON_JOB), detach=True)
    second = run_job(local_cluster, JobSpec(run=DAEMON_JOB), detach=True)
    # 2 jobs x 2 nodes x (bash, setsid'd sleep, sleep)
    assert wait_until(lambda: len(marks_of(local_cluster)) >= 12), marks_of(local_cluster)
    assert cancel(local_cluster, first.job_id)
    assert wait_until(lambda: len(marks_of(local_cluster)) == 6)  # the daemons went too
    stop_all_jobs(local_cluster)
    assert marks_of(local_cluster) == []
    statuses = {j["job_id"]: j["status"] for j in queue(local_cluster)}
    assert statuses == {first.job_id: "CANCELLED", second.job_id: "CANCELLED"}


def test_a_follow_ends_when_the_jobs_files_vanish(local_cluster: ClusterInfo,
                                                  skyc_home: Path, tmp_path: Path) -> None:
    register(skyc_home, local_cluster)
    task = tmp_path / "t.yaml"
    task.write_text("num_nodes: 2\nrun: echo started; sleep 300\n")
    proc = subprocess.Popen([sys.executable, "-m", "skyc", "exec", "loc", str(task)],
                            env={**os.environ, "SKYC_HOME": str(skyc_home)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    jobs = Path(local_cluster.nodes[1].node_dir or "", ".skyc", "jobs", "1")
    assert wait_until(lambda: (jobs / "run.pgid").exists())
    import shutil

    shutil.rmtree(jobs)  # what destroying the node does to its files
    try:
        proc.wait(timeout=20)
    finally:
        proc.kill()
        for pid in marks_of(local_cluster):  # the job itself outlives its files here
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    assert proc.returncode != 0


def test_parallel_execs_each_recorded_with_the_right_exit_code(
        local_cluster: ClusterInfo, skyc_home: Path, tmp_path: Path) -> None:
    # 20 execs at once (60 is what the benchmark runs; 20 keeps 2 cores responsive)
    register(skyc_home, local_cluster)
    task = tmp_path / "t.yaml"
    task.write_text("name: par\nrun: exit $CODE\n")

    def one(i: int) -> tuple[int, int]:
        out = skyc(skyc_home, "exec", "loc", str(task), "--env", f"CODE={i % 7}")
        return i % 7, out.returncode

    with ThreadPoolExecutor(20) as pool:
        results = list(pool.map(one, range(20)))
    assert all(want == got for want, got in results), results
    with StateDB() as db:
        records = db.list_jobs("loc")
    assert sorted(r.job_id or 0 for r in records) == list(range(1, 21))
    assert sorted(r.exit_codes["head"] for r in records) == sorted(i % 7 for i in range(20))
    table = json.loads((skyc_home / "logs" / "loc" / "jobs.json").read_text())
    assert [j["job_id"] for j in table] == list(range(1, 21))


def test_status_queue_and_logs_share_the_job_id(local_cluster: ClusterInfo, skyc_home: Path,
                                                tmp_path: Path) -> None:
    register(skyc_home, local_cluster)
    with StateDB() as db:  # an older row in the database: its id differs from the cluster's
        db.add_job("other", "x")
    task = tmp_path / "t.yaml"
    task.write_text("name: ids\nrun: echo hi\n")
    assert skyc(skyc_home, "exec", "loc", str(task)).returncode == 0
    status = json.loads(skyc(skyc_home, "status", "--format", "json").stdout)["clusters"]
    job_id = status[0]["last_job"]["id"]
    assert job_id == 1
    out = skyc(skyc_home, "logs", "loc", str(job_id))
    assert out.returncode == 0 and "(head, rank=0) hi" in out.stdout


def test_detached_multinode_failure_stops_the_others_and_is_recorded(
        local_cluster: ClusterInfo, skyc_home: Path, tmp_path: Path) -> None:
    register(skyc_home, local_cluster)
    task = tmp_path / "t.yaml"
    task.write_text("name: det\nnum_nodes: 2\nrun: |\n"
                    "  if [ \"$SKYPILOT_NODE_RANK\" = 1 ]; then sleep 1; exit 3; fi\n"
                    "  sleep 300\n")
    out = skyc(skyc_home, "exec", "loc", str(task), "--detach")
    assert out.returncode == 0, out.stderr
    out = skyc(skyc_home, "logs", "loc", "1", "--follow")
    assert out.returncode == 3, out.stderr  # the failing node's code, not 143
    assert wait_until(lambda: marks_of(local_cluster) == [])  # the head was stopped

    def recorded() -> bool:
        with StateDB() as db:
            job = db.find_job("loc", 1)
        return job is not None and job.status == "FAILED"

    assert wait_until(recorded)
    assert "FAILED" in skyc(skyc_home, "queue", "loc").stdout


def test_a_client_killed_between_setup_and_run_does_not_leave_the_job_running(
        local_cluster: ClusterInfo, skyc_home: Path, tmp_path: Path) -> None:
    register(skyc_home, local_cluster)
    task = tmp_path / "t.yaml"
    task.write_text("name: killed\nsetup: touch ~/in_setup; sleep 1\nrun: touch ~/ran\n")
    proc = subprocess.Popen([sys.executable, "-m", "skyc", "exec", "loc", str(task)],
                            env={**os.environ, "SKYC_HOME": str(skyc_home)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    head = Path(local_cluster.nodes[0].node_dir or "")
    assert wait_until(lambda: (head / "in_setup").exists())
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert wait_until(lambda: (head / ".skyc" / "jobs" / "1" / "setup.exit").exists())
    out = skyc(skyc_home, "queue", "loc")
    assert "FAILED" in out.stdout and "RUNNING" not in out.stdout, out.stdout
    with StateDB() as db:
        job = db.find_job("loc", 1)
    assert job is not None and job.status == "FAILED"
    assert not (head / "ran").exists()


def test_exec_runs_on_num_nodes_and_refuses_missing_accelerators(
        local_cluster: ClusterInfo, skyc_home: Path, tmp_path: Path) -> None:
    register(skyc_home, local_cluster)
    task = tmp_path / "one.yaml"
    task.write_text("num_nodes: 1\nrun: echo nodes=$SKYPILOT_NUM_NODES\n")
    out = skyc(skyc_home, "exec", "loc", str(task))
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["(head, rank=0) nodes=1"]
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text("resources:\n  accelerators: L4:4\nrun: touch ~/ran\n")
    out = skyc(skyc_home, "exec", "loc", str(gpu))
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert "L4:4" in out.stderr and "no accelerators" in out.stderr
    assert not (Path(local_cluster.nodes[0].node_dir or "") / "ran").exists()


def test_a_200_kib_run_script_runs_and_a_200_kib_env_value_is_refused(
        local_cluster: ClusterInfo, skyc_home: Path, tmp_path: Path) -> None:
    register(skyc_home, local_cluster)
    script = "\n".join([f"# {'x' * 1000}"] * 200 + ["echo big-script-ran"])
    task = tmp_path / "big.yaml"
    task.write_text("run: |\n" + "".join(f"  {line}\n" for line in script.splitlines()))
    out = skyc(skyc_home, "exec", "loc", str(task))
    assert out.returncode == 0, out.stderr
    assert "(head, rank=0) big-script-ran" in out.stdout
    env = tmp_path / "env.yaml"
    env.write_text(f"envs:\n  BIG: {'y' * 200 * 1024}\nrun: echo ${{#BIG}}\n")
    out = skyc(skyc_home, "exec", "loc", str(env))
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert "envs.BIG" in out.stderr and "127 KiB" in out.stderr, out.stderr


def test_a_50_mb_line_without_newline_stays_in_bounded_memory(
        local_cluster: ClusterInfo) -> None:
    got = [0]

    def sink(data: bytes) -> None:
        got[0] += len(data)

    spec = JobSpec(num_nodes=1, run="head -c 50000000 /dev/zero | tr '\\0' a")
    tracemalloc.start()
    try:
        result = run_job(local_cluster, spec, on_output=sink)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.ok
    assert got[0] >= 50_000_000
    assert peak < 16 * 1024 * 1024, peak


def test_a_local_nodes_log_is_stored_once_and_outlives_the_node(
        local_cluster: ClusterInfo, skyc_home: Path) -> None:
    import shutil

    spec = JobSpec(setup="echo set-up", run="echo out-$SKYPILOT_NODE_RANK; echo more")
    result = run_job(local_cluster, spec, on_output=lambda data: None)
    assert result.ok
    stored = skyc_home / "logs" / "loc" / str(result.job_id)
    for rank, node in enumerate(local_cluster.nodes):
        own = Path(node.node_dir or "", ".skyc", "jobs", str(result.job_id))
        for phase, name in (("run", f"{node.name}.log"), ("setup", f"{node.name}.setup.log")):
            local, there = stored / name, own / f"{phase}.log"
            # One file on disk: the stored log is the node's own (a hard link, not a copy).
            assert os.stat(local).st_ino == os.stat(there).st_ino, (local, there)
        assert (stored / f"{node.name}.log").read_text() == f"out-{rank}\nmore\n"
        assert (stored / f"{node.name}.setup.log").read_text() == "set-up\n"
    detached = run_job(local_cluster, JobSpec(run="echo later; sleep 0.5; echo done"),
                       detach=True)
    head_log = skyc_home / "logs" / "loc" / str(detached.job_id) / "head.log"
    assert wait_until(lambda: head_log.exists() and "done" in head_log.read_text())
    for node in local_cluster.nodes:  # what destroying the nodes does to their files
        shutil.rmtree(node.node_dir or "")
    assert (stored / "worker1.log").read_text() == "out-1\nmore\n"
    assert head_log.read_text() == "later\ndone\n"


def test_plan_reshape_names_the_nodes_a_placement_removes_and_the_jobs_there(
        local_cluster: ClusterInfo, skyc_home: Path) -> None:
    from skyc.apply.preflight import check_reshape, plan_reshape
    from skyc.model.plan import Placement

    save_cluster(skyc_home, local_cluster)
    now = Placement(cloud="local", region="local", num_nodes=2, hourly_cost=0.0)
    record = ClusterRecord(name="loc", status="UP", cloud="local", launched_at=time.time(),
                           placement=now.model_dump(mode="json"),
                           nodes=[n.model_dump(mode="json") for n in local_cluster.nodes])
    assert plan_reshape(record, now) is None
    older = {k: v for k, v in record.placement.items() if k != "use_spot"}  # a field unset
    assert plan_reshape(record.model_copy(update={"placement": older}), now) is None
    assert plan_reshape(record, now.model_copy(update={"num_nodes": 3})) is None
    assert plan_reshape(record.model_copy(update={"launched_at": None}),
                        now.model_copy(update={"num_nodes": 1})) is None  # never came up
    smaller = plan_reshape(record, now.model_copy(update={"num_nodes": 1}))
    assert smaller is not None and (smaller.removed, smaller.busy) == (["worker1"], {})
    check_reshape(smaller, allow=False)  # no job there: nothing to refuse
    other = plan_reshape(record, now.model_copy(update={"instance_type": "big"}))
    assert other is not None and other.removed == ["head", "worker1"]  # every node replaced

    job = run_job(local_cluster, JobSpec(run="sleep 300"), detach=True)
    try:
        busy = plan_reshape(record, now.model_copy(update={"num_nodes": 1}))
        assert busy is not None and list(busy.busy) == [job.job_id], busy
        with pytest.raises(SkycError, match=r"jobs still run there: job \d+ \(job, RUNNING on "
                           r"worker1\); nothing was changed"):
            check_reshape(busy, allow=False)
        check_reshape(busy, allow=True)
    finally:
        from skyc.runtime import stop_all_jobs

        stop_all_jobs(local_cluster)
