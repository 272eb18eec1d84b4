"""``skyc apply`` end to end on the ``local`` infra (node directories on this machine).

Real subprocesses of ``python -m skyc``; the real terraform binary builds the
local stack; jobs run through the real node agent.
"""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

from tests.e2e.conftest import REPO, Skyc, pid_alive, wait_until

HEAD = "(head, rank=0)"
WORKER = "(worker1, rank=1, ip=127.0.0.1)"


def _engine_logs(skyc: Skyc, cluster: str) -> set[str]:
    logs = skyc.workspace(cluster) / "logs"
    return {p.name for p in logs.iterdir()} if logs.is_dir() else set()


def _setup_ran_on_both(stdout: str) -> bool:
    return f"{HEAD} SETUP-RAN rank=0" in stdout and f"{WORKER} SETUP-RAN rank=1" in stdout


def test_hello_example_runs_on_two_nodes_and_down_removes_the_cluster(skyc: Skyc) -> None:
    shutil.copytree(REPO / "examples" / "hello", skyc.cwd / "examples" / "hello")
    shutil.copy(REPO / "examples" / "hello.yaml", skyc.cwd / "examples" / "hello.yaml")

    result = skyc.ok("apply", "examples/hello.yaml", "--yes", "--down")

    lines = result.stdout.splitlines()
    for prefix, rank in ((HEAD, 0), (WORKER, 1)):
        assert f"{prefix} setup on " in result.stdout, str(result)
        assert f"{prefix} hello from node {rank} of 2" in lines, str(result)
        assert f"{prefix} hello from the workdir" in lines, str(result)
    # Setup before run on each node.
    assert lines.index(f"{HEAD} hello from node 0 of 2") > min(
        i for i, line in enumerate(lines) if line.startswith(f"{HEAD} setup on "))
    for stage in ("==> optimize", "==> provision", "==> run", "==> down"):
        assert stage in result.stderr, str(result)
    # Down: the workspace is gone but for engine logs; the job's logs stay.
    ws = skyc.workspace("hello")
    assert not ws.exists() or {p.name for p in ws.iterdir()} <= {"logs"}, list(ws.iterdir())
    assert not (ws / "nodes").exists()
    assert (skyc.home / "logs" / "hello" / "1").is_dir()
    assert skyc.clusters() == []
    status = skyc.ok("status")
    assert "hello" not in status.stdout


def test_worker_failure_sets_exit_code_names_the_node_and_stops_the_head(
    skyc: Skyc, tmp_path: Path
) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    skyc.write("fail.yaml", f"""\
name: failing
num_nodes: 2
resources:
  infra: local
run: |
  if [ "$SKYPILOT_NODE_RANK" = 1 ]; then
    for i in $(seq 100); do [ -s {marks}/head.pid ] && break; sleep 0.1; done
    echo "worker giving up"
    exit 3
  fi
  sleep 120 &
  echo $! > {marks}/sleep.pid
  echo $$ > {marks}/head.pid
  echo "head waiting"
  wait
""")
    result = skyc("apply", "fail.yaml", "--yes", timeout=90)

    assert result.returncode == 3, str(result)
    assert "Traceback" not in result.output
    assert result.seconds < 60, "the head was not stopped when the worker failed"
    assert f"{WORKER} worker giving up" in result.stdout, str(result)
    assert f"{HEAD} head waiting" in result.stdout, str(result)
    error = result.stderr[result.stderr.find("error"):]
    assert "worker1" in error and "3" in error, str(result)
    for name in ("head.pid", "sleep.pid"):
        pid = int((marks / name).read_text())
        assert wait_until(lambda pid=pid: not pid_alive(pid), timeout=5), f"{name} {pid} runs"
    skyc.ok("destroy", "failing", "--yes")


def test_exec_queue_logs_setup_once_and_destroy(skyc: Skyc) -> None:
    skyc.write("main.yaml", """\
name: jobs
num_nodes: 2
resources:
  infra: local
setup: echo "SETUP-RAN rank=$SKYPILOT_SETUP_NODE_RANK"
run: echo "main says $SKYPILOT_NODE_RANK"
""")
    skyc.write("other.yaml", """\
name: other
run: echo "other says $SKYPILOT_NODE_RANK of $SKYPILOT_NUM_NODES"
""")
    first = skyc.ok("apply", "main.yaml", "--yes")
    assert _setup_ran_on_both(first.stdout), str(first)
    assert f"{WORKER} main says 1" in first.stdout
    engine_logs = _engine_logs(skyc, "jobs")

    other = skyc.ok("exec", "jobs", "other.yaml")
    # a 1-node task runs on the head only, and is told so
    assert f"{HEAD} other says 0 of 1" in other.output and "other says 1" not in other.output
    assert "provision" not in other.output and "optimize" not in other.output, str(other)
    assert _engine_logs(skyc, "jobs") == engine_logs, "exec ran the engine"
    assert other.seconds < first.seconds, (other.seconds, first.seconds)

    queue = skyc.ok("queue", "jobs")
    row = re.compile(r"^\s*(?:jobs\s+)?(\d+)\s+(\S+)", re.M)  # with or without a cluster column
    rows = {m.group(1): m.group(2) for m in row.finditer(queue.stdout)}
    assert rows == {"1": "jobs", "2": "other"}, queue.stdout
    assert queue.stdout.count("SUCCEEDED") >= 2, queue.stdout

    replay = skyc.ok("logs", "jobs", "1")
    assert "main says 0" in replay.stdout and "main says 1" in replay.stdout, str(replay)
    assert "other says" not in replay.stdout

    again = skyc.ok("apply", "main.yaml", "--yes")
    assert "main says 1" in again.stdout
    assert "SETUP-RAN" not in again.stdout, "setup ran again though it did not change"
    forced = skyc.ok("apply", "main.yaml", "--yes", "--setup")
    assert _setup_ran_on_both(forced.stdout), str(forced)
    again_exec = skyc.ok("exec", "jobs", "main.yaml")
    assert "SETUP-RAN" not in again_exec.stdout and "main says 1" in again_exec.stdout
    assert _setup_ran_on_both(skyc.ok("exec", "jobs", "main.yaml", "--setup").stdout)

    skyc.ok("destroy", "jobs", "--yes")
    assert not (skyc.workspace("jobs") / "cluster.json").exists()
    assert not (skyc.workspace("jobs") / "nodes").exists()
    assert skyc.clusters() == []
    gone = skyc("queue", "jobs")
    assert gone.returncode != 0 and "no cluster named 'jobs'" in gone.stderr, str(gone)


def test_detach_then_follow_then_cancel(skyc: Skyc, tmp_path: Path) -> None:
    skyc.write("ticks.yaml", f"""\
name: ticks
resources:
  infra: local
run: |
  echo started
  touch {tmp_path}/started
  for i in 1 2 3 4; do sleep 1; echo "tick $i"; done
  echo finished
  touch {tmp_path}/finished
""")
    detached = skyc.ok("apply", "ticks.yaml", "--yes", "--detach")
    assert not (tmp_path / "finished").exists(), "--detach waited for the job to end"
    assert wait_until((tmp_path / "started").exists, timeout=5), "the job did not start"
    assert "finished" not in detached.stdout
    follow = skyc.ok("logs", "ticks", "1", "--follow", timeout=60)
    assert "tick 4" in follow.stdout and "finished" in follow.stdout, str(follow)
    assert follow.stdout.index("started") < follow.stdout.index("finished")

    pidfile = tmp_path / "long.pid"
    skyc.write("long.yaml", f"""\
name: long
run: |
  sleep 300 &
  echo $! > {pidfile}
  echo long job up
  wait
""")
    t0 = time.monotonic()
    started = skyc.ok("exec", "ticks", "long.yaml", "--detach")
    assert time.monotonic() - t0 < 30
    assert "job 2 started" in started.stderr, str(started)
    assert wait_until(lambda: pidfile.exists() and pidfile.read_text().strip(), timeout=10)
    pid = int(pidfile.read_text())
    assert pid_alive(pid)

    cancelled = skyc.ok("cancel", "ticks", "2")
    assert "cancelled" in cancelled.stdout, str(cancelled)
    assert wait_until(lambda: not pid_alive(pid), timeout=5), f"job process {pid} survived cancel"
    queue = skyc.ok("queue", "ticks")
    assert re.search(r"^\s*(?:ticks\s+)?2\s+long\s.*CANCELLED", queue.stdout, re.M), queue.stdout
    skyc.ok("destroy", "ticks", "--yes")


def test_destroy_ends_every_job_process_including_setsid_daemons(
        skyc: Skyc, tmp_path: Path) -> None:
    from skyc.model.nodes import ClusterInfo
    from tests.runtime.test_job_truth import marks_of

    skyc.write("daemons.yaml", f"""\
name: daemons
num_nodes: 2
resources:
  infra: local
run: |
  setsid bash -c 'echo $$ > {tmp_path}/daemon.$SKYPILOT_NODE_RANK; sleep 300' \\
    < /dev/null > /dev/null 2>&1 &
  sleep 300
""")
    skyc.ok("apply", "daemons.yaml", "--yes", "--detach")
    daemons = [tmp_path / "daemon.0", tmp_path / "daemon.1"]
    assert wait_until(lambda: all(d.exists() and d.read_text().strip() for d in daemons),
                      timeout=20)
    pids = [int(d.read_text()) for d in daemons]
    assert all(pid_alive(p) for p in pids)
    # Only this cluster's marked processes count: other tests run jobs at the same time.
    cluster = ClusterInfo.model_validate_json(
        (skyc.home / "clusters" / "daemons" / "cluster.json").read_text())
    assert set(pids) <= set(marks_of(cluster)), "the daemons carry the cluster's job mark"
    skyc.ok("destroy", "daemons", "--yes")
    assert not any(pid_alive(p) for p in pids), "a setsid daemon outlived destroy"
    assert marks_of(cluster) == [], "job processes outlived destroy"


def test_reshape_shows_what_it_removes_refuses_while_jobs_run_there_and_keeps_history(
        skyc: Skyc, tmp_path: Path) -> None:
    import json

    skyc.write("two.yaml", f"""\
name: rs
num_nodes: 2
resources:
  infra: local
run: |
  if [ "$SKYPILOT_NODE_RANK" = 1 ]; then
    if [ -n "$LONG" ]; then echo $$ > {tmp_path}/worker.pid; sleep 300; fi
    echo worker-fails; exit 3
  fi
  sleep 300
""")
    skyc.write("one.yaml", "name: other\nresources:\n  infra: local\nrun: echo one-node\n")
    assert skyc("apply", "two.yaml", "--yes").returncode == 3  # job 1: worker1 fails
    skyc.ok("exec", "rs", "two.yaml", "--env", "LONG=1", "--detach")  # job 2 runs on
    pid_file = tmp_path / "worker.pid"
    assert wait_until(lambda: pid_file.exists() and pid_file.read_text().strip(), timeout=20)
    worker_pid = int(pid_file.read_text())

    refused = skyc("apply", "-c", "rs", "one.yaml", "--yes")
    assert refused.returncode == 1 and "Traceback" not in refused.stderr, str(refused)
    err = " ".join(refused.stderr.split())
    assert ("apply would remove node(s) worker1 of cluster rs (2 -> 1 nodes), and jobs "
            "still run there: job 2 (rs, RUNNING on worker1); nothing was changed") in err, err
    assert "--allow-reshape" in err and "skyc cancel rs 2" in err, err
    assert pid_alive(worker_pid)
    [row] = json.loads(skyc.ok("status", "rs", "--format", "json").stdout)["clusters"]
    assert len(row["nodes"]) == 2 and row["status"] == "UP"

    done = skyc.ok("apply", "-c", "rs", "one.yaml", "--yes", "--allow-reshape")
    err = " ".join(done.stderr.split())
    assert "reshape cluster rs: 2 -> 1 node(s); removes node(s) worker1" in err, err
    assert "reshape removes terraform_data.node_1 (delete)" in err, err
    assert "reshape stops job 2 (rs, RUNNING on worker1)" in err, err
    assert err.index("reshape") < err.index("provision local"), err
    assert f"{HEAD} one-node" in done.stdout
    assert wait_until(lambda: not pid_alive(worker_pid), timeout=10), "the job outlived its node"

    # History: job 1 stays FAILED (worker1's code 3), job 2 ended CANCELLED, job 3 ran.
    queue = skyc.ok("queue", "rs").stdout
    rows = {next(t for t in line.split() if t.isdigit()): line for line in queue.splitlines()
            if any(t.isdigit() for t in line.split())}
    assert "FAILED" in rows["1"] and "worker1: FAILED" in rows["1"], queue
    assert "CANCELLED" in rows["2"] and "SUCCEEDED" in rows["3"], queue
    # logs of job 1: worker1's stored log and its code, though worker1 is gone
    replay = skyc("logs", "rs", "1")
    assert replay.returncode == 3, str(replay)
    assert "(worker1, removed) worker-fails" in replay.stdout, str(replay)
    from skyc.state.database import StateDB

    with StateDB(skyc.home / "state.db") as db:
        jobs = {j.job_id: j for j in db.list_jobs("rs")}
    assert (jobs[1].status, jobs[1].exit_codes) == ("FAILED", {"head": 143, "worker1": 3})
    assert (jobs[2].status, jobs[3].status) == ("CANCELLED", "SUCCEEDED")
    skyc.ok("destroy", "rs", "--yes")
