"""Managed jobs on the ``local`` infra, end to end: real ``python -m skyc`` processes, the
real terraform binary for the local stack, the real node agent. A preemption is
simulated by SIGKILLing every process of a node (nothing is mocked)."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from tests.e2e.conftest import Skyc, pid_alive, wait_until
from tests.jobs.conftest import daemon_pid, job, kill_node, node_pids, wait_for

# The checkpoint convention: a directory that outlives the cluster, named by the
# task id (stable across recoveries), read back by the recovered run.
RESUMABLE = """\
name: train
num_nodes: 2
resources:
  infra: local
  job_recovery:
    strategy: EAGER_NEXT_REGION
setup: echo setup-ran
run: |
  ckpt="$CKPT_ROOT/$SKYPILOT_TASK_ID"
  mkdir -p "$ckpt"
  echo "$SKYPILOT_TASK_ID" >> "$CKPT_ROOT/ids-$SKYPILOT_NODE_RANK"
  if [ -f "$ckpt/step" ]; then echo "resumed at step $(cat "$ckpt/step")"; exit 0; fi
  if [ "$SKYPILOT_NODE_RANK" = 0 ]; then echo 7 > "$ckpt/step"; fi
  echo started
  sleep 600
"""


def _cluster_left(skyc: Skyc, name: str) -> bool:
    return (skyc.workspace(name) / "cluster.json").exists()


def test_killed_node_is_recovered_and_the_job_completes_with_its_id(
        jobs: Skyc, tmp_path: Path) -> None:
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    jobs.write("train.yaml", RESUMABLE)
    launched = jobs.ok("jobs", "launch", "train.yaml", "-y", "-d", "--env",
                       f"CKPT_ROOT={ckpt}")
    assert launched.stdout.strip() == "1"
    wait_for(jobs, 1, lambda j: j["status"] == "RUNNING")
    assert wait_until(lambda: len(list(ckpt.glob("*/step"))) == 1, timeout=30)
    head = jobs.workspace("skyc-job-1") / "nodes" / "head"
    assert kill_node(head) > 0

    done = wait_for(jobs, 1, lambda j: j["status"] in ("SUCCEEDED", "FAILED"), timeout=180)

    assert done["status"] == "SUCCEEDED", done
    assert done["id"] == 1 and done["name"] == "train"
    trail = [e["status"] for e in done["trail"]]
    assert trail.count("RECOVERING") == 1, trail
    assert trail[0] == "PENDING" and trail[-1] == "SUCCEEDED"
    recovering = next(e for e in done["trail"] if e["status"] == "RECOVERING")
    assert recovering["data"]["infra"] == "local"
    assert "without an exit code" in recovering["data"]["why"]
    assert done["recoveries"] == 1 and done["restarts"] == 0
    assert len(done["attempts"]) == 2
    assert done["attempts"][0]["outcome"].startswith("PREEMPTED")
    # The task id (and so the checkpoint directory) stayed the same on both runs.
    for rank in (0, 1):
        ids = (ckpt / f"ids-{rank}").read_text().split()
        assert len(ids) == 2 and ids[0] == ids[1], ids
    logs = jobs.ok("jobs", "logs", "1").stdout
    assert "resumed at step 7" in logs and "setup-ran" in logs
    # Nothing is left running: the cluster is torn down, its nodes have no process.
    assert not _cluster_left(jobs, "skyc-job-1")
    assert jobs.clusters() == []
    assert node_pids(head) == []


def test_a_failing_program_is_restarted_at_most_max_restarts_on_errors(
        jobs: Skyc, tmp_path: Path) -> None:
    count = tmp_path / "runs"
    jobs.write("flaky.yaml", f"""\
name: flaky
resources:
  infra: local
  job_recovery:
    max_restarts_on_errors: 2
run: |
  echo run >> {count}
  exit 1
""")
    jobs.ok("jobs", "launch", "flaky.yaml", "-y", "-d")
    done = wait_for(jobs, 1, lambda j: j["status"] in ("SUCCEEDED", "FAILED"), timeout=120)

    assert done["status"] == "FAILED", done
    assert count.read_text().split() == ["run"] * 3   # the first run and two restarts
    assert done["restarts"] == 2 and done["recoveries"] == 0
    assert "exited with code 1" in (done["failure"] or "")
    assert not _cluster_left(jobs, "skyc-job-1")


def test_exit_codes_listed_in_recover_on_exit_codes_count_as_preemptions(
        jobs: Skyc, tmp_path: Path) -> None:
    marker = tmp_path / "first"
    jobs.write("spot.yaml", f"""\
name: spot
resources:
  infra: local
  job_recovery:
    max_restarts_on_errors: 0
    recover_on_exit_codes: [33]
run: |
  if [ ! -f {marker} ]; then touch {marker}; exit 33; fi
  echo second-run
""")
    jobs.ok("jobs", "launch", "spot.yaml", "-y", "-d")
    done = wait_for(jobs, 1, lambda j: j["status"] in ("SUCCEEDED", "FAILED"), timeout=180)

    assert done["status"] == "SUCCEEDED", done
    assert done["recoveries"] == 1 and done["restarts"] == 0
    assert "second-run" in jobs.ok("jobs", "logs", "1").stdout


def test_a_killed_controller_started_again_resumes_without_a_second_cluster(
        jobs: Skyc, tmp_path: Path) -> None:
    go = tmp_path / "go"
    runs = tmp_path / "runs"
    jobs.write("long.yaml", f"""\
name: long
resources:
  infra: local
run: |
  echo run >> {runs}
  while [ ! -f {go} ]; do sleep 0.2; done
  echo finished
""")
    jobs.ok("jobs", "launch", "long.yaml", "-y", "-d")
    running = wait_for(jobs, 1, lambda j: j["status"] == "RUNNING")
    pid = running["controller_pid"]
    assert pid and pid_alive(pid) and pid == daemon_pid(jobs.home)
    assert running["controller"] == "alive"

    # Two controllers never supervise one job: a foreground one is refused while the
    # controller process holds the job's lease.
    second = jobs("jobs", "controller", "1", timeout=60)
    assert second.returncode != 0
    assert "supervised by another controller" in second.stderr, str(second)
    assert "Traceback" not in second.output

    os.kill(pid, signal.SIGKILL)
    assert wait_until(lambda: not pid_alive(pid), timeout=10)
    # The next `skyc jobs` command notices the job has no controller and starts one,
    # which takes the job over once the dead one's lease has expired.
    revived = jobs.ok("jobs", "queue")
    assert "controller was not running: restarted it" in revived.stderr, str(revived)
    resumed = wait_for(jobs, 1, lambda j: j["controller_pid"] not in (None, pid)
                       and j["controller"] == "alive", timeout=30)
    assert resumed["controller_pid"] == daemon_pid(jobs.home)
    assert "restarted" not in jobs.ok("jobs", "queue").stderr   # said once, not again
    go.touch()
    done = wait_for(jobs, 1, lambda j: j["status"] in ("SUCCEEDED", "FAILED"), timeout=120)

    assert done["status"] == "SUCCEEDED", done
    assert runs.read_text().split() == ["run"]          # watched, not started again
    assert len(done["attempts"]) == 1                   # one cluster, provisioned once
    assert [e["status"] for e in done["trail"]].count("RECOVERING") == 0
    assert "resuming supervision" in jobs.ok("jobs", "logs", "1", "--controller").stdout
    assert not _cluster_left(jobs, "skyc-job-1")


def test_controller_restart_starts_a_dead_controller_explicitly(
        jobs: Skyc, tmp_path: Path) -> None:
    go = tmp_path / "go"
    jobs.write("long.yaml", f"""\
name: long
resources:
  infra: local
run: |
  while [ ! -f {go} ]; do sleep 0.2; done
""")
    jobs.ok("jobs", "launch", "long.yaml", "-y", "-d")
    pid = wait_for(jobs, 1, lambda j: j["status"] == "RUNNING")["controller_pid"]
    os.kill(pid, signal.SIGKILL)
    assert wait_until(lambda: not pid_alive(pid), timeout=10)

    started = jobs.ok("jobs", "controller", "--restart")
    new_pid = daemon_pid(jobs.home)
    assert new_pid and new_pid != pid
    assert started.stdout.strip() == f"managed-jobs controller started (pid {new_pid})"
    again = jobs.ok("jobs", "controller", "--restart")
    assert again.stdout.strip() == f"managed-jobs controller already runs (pid {new_pid})"
    # A second controller process started by hand sees the first and exits at once.
    extra = jobs.ok("jobs", "controller", timeout=60)
    assert f"already runs (pid {new_pid})" in extra.stdout
    wait_for(jobs, 1, lambda j: j["controller_pid"] == new_pid, timeout=30)
    go.touch()
    done = wait_for(jobs, 1, lambda j: j["status"] in ("SUCCEEDED", "FAILED"), timeout=120)
    assert done["status"] == "SUCCEEDED" and len(done["attempts"]) == 1, done


def test_cancel_stops_the_run_and_leaves_nothing_running(jobs: Skyc) -> None:
    jobs.write("forever.yaml", """\
name: forever
resources:
  infra: local
run: sleep 600
""")
    jobs.ok("jobs", "launch", "forever.yaml", "-y", "-d")
    wait_for(jobs, 1, lambda j: j["status"] == "RUNNING")
    head = jobs.workspace("skyc-job-1") / "nodes" / "head"
    assert node_pids(head)

    out = jobs.ok("jobs", "cancel", "1", timeout=120)

    assert "managed job 1: CANCELLED" in out.stdout
    done = job(jobs, 1)
    assert done["status"] == "CANCELLED"
    assert [e["status"] for e in done["trail"]][-2:] == ["CANCELLING", "CANCELLED"]
    assert not _cluster_left(jobs, "skyc-job-1")
    assert wait_until(lambda: node_pids(head) == [], timeout=10)
    # History outlives the cluster.
    assert jobs.clusters() == [] and job(jobs, 1)["attempts"]
    time.sleep(0)


def test_bad_input_is_refused_before_anything_is_recorded(jobs: Skyc) -> None:
    jobs.write("bad.yaml", "name: bad\nresources:\n  infra: local\n  job_recovery:\n"
               "    strategy: SOMETIMES\nrun: echo hi\n")
    bad = jobs("jobs", "launch", "bad.yaml", "-y", "-d")
    assert bad.returncode != 0 and "job_recovery" in bad.stderr, str(bad)
    assert "Traceback" not in bad.output
    missing = jobs("jobs", "logs", "9")
    assert missing.returncode != 0 and "no managed job 9" in missing.stderr
    assert json.loads(jobs.ok("jobs", "queue", "--format", "json").stdout)["jobs"] == []


def test_cancel_during_a_long_setup_ends_it_and_tears_down(jobs: Skyc, tmp_path: Path) -> None:
    marker = tmp_path / "setup-started"
    jobs.write("slow.yaml", f"""\
name: slow
resources:
  infra: local
setup: |
  touch {marker}
  sleep 600
run: echo never
""")
    jobs.ok("jobs", "launch", "slow.yaml", "-y", "-d")
    assert wait_until(marker.exists, timeout=60)
    head = jobs.workspace("skyc-job-1") / "nodes" / "head"
    t0 = time.monotonic()

    out = jobs.ok("jobs", "cancel", "1", timeout=120)

    assert "managed job 1: CANCELLED" in out.stdout, str(out)
    assert time.monotonic() - t0 < 60
    assert "never" not in jobs.ok("jobs", "logs", "1").stdout
    assert not _cluster_left(jobs, "skyc-job-1")
    assert wait_until(lambda: node_pids(head) == [], timeout=10)
