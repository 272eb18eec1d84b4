"""Pipelines as one managed job, secrets on the controller's stdin, and an attached
launch that follows the job to its end (real skyc processes on the local infra)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from tests.e2e.conftest import Skyc, files_containing, pid_alive, wait_until
from tests.jobs.conftest import job, wait_for

SECRET = "s3cr3t-value-42"


def test_a_pipeline_runs_task_after_task_as_one_job(jobs: Skyc, tmp_path: Path) -> None:
    order = tmp_path / "order"
    jobs.write("pipe.yaml", f"""\
name: pipe
---
name: prepare
resources:
  infra: local
run: echo "prepare $SKYPILOT_TASK_ID" >> {order}
---
name: train
num_nodes: 2
resources:
  infra: local
run: |
  if [ "$SKYPILOT_NODE_RANK" = 0 ]; then echo "train $SKYPILOT_TASK_ID" >> {order}; fi
""")
    jobs.ok("jobs", "launch", "pipe.yaml", "-y", "-d")
    done = wait_for(jobs, 1, lambda j: j["status"] in ("SUCCEEDED", "FAILED"), timeout=180)

    assert done["status"] == "SUCCEEDED", done
    assert done["name"] == "pipe" and done["num_tasks"] == 2 and done["task_index"] == 2
    lines = order.read_text().splitlines()
    assert [line.split()[0] for line in lines] == ["prepare", "train"]
    assert lines[0].endswith("_pipe_1-0") and lines[1].endswith("_pipe_1-1")
    assert [a["cluster"] for a in done["attempts"]] == ["skyc-job-1-0", "skyc-job-1-1"]
    assert jobs.clusters() == []


def test_secrets_reach_the_job_through_the_controller_and_are_never_stored(
        jobs: Skyc, tmp_path: Path) -> None:
    seen = tmp_path / "seen"
    jobs.write("sec.yaml", f"""\
name: sec
resources:
  infra: local
secrets:
  TOKEN: null
run: echo "$TOKEN $API_TOKEN" > {seen}
""")
    # An --env under a secret-looking name travels with the secrets, not in the state.
    result = jobs.ok("jobs", "launch", "sec.yaml", "-y", "-d", "--secret", f"TOKEN={SECRET}",
                     "--env", "API_TOKEN=env-val-77")
    done = wait_for(jobs, 1, lambda j: j["status"] in ("SUCCEEDED", "FAILED"), timeout=120)

    assert done["status"] == "SUCCEEDED", done
    assert seen.read_text().strip() == f"{SECRET} env-val-77"
    assert SECRET not in result.output
    assert files_containing(jobs.home, SECRET.encode()) == []
    assert files_containing(jobs.home, b"env-val-77") == []
    for args in (("jobs", "queue", "--format", "json"), ("jobs", "logs", "1"),
                 ("jobs", "logs", "1", "--controller")):
        assert SECRET not in jobs.ok(*args).output


def test_a_controller_started_again_without_the_secrets_fails_the_job_by_name(
        jobs: Skyc) -> None:
    jobs.write("sec.yaml", "name: sec\nresources:\n  infra: local\nsecrets:\n  TOKEN: null\n"
               "run: sleep 600\n")
    jobs.ok("jobs", "launch", "sec.yaml", "-y", "-d", "--secret", "TOKEN=x")
    pid = wait_for(jobs, 1, lambda j: j["status"] == "RUNNING")["controller_pid"]
    os.kill(pid, signal.SIGKILL)
    assert wait_until(lambda: not pid_alive(pid), timeout=10)

    again = jobs("jobs", "controller", "1", timeout=120)   # stdin: /dev/null, no secrets

    assert again.returncode != 0 and "Traceback" not in again.output, str(again)
    done = job(jobs, 1)
    assert done["status"] == "FAILED", str(again)
    assert "TOKEN" in done["failure"] and "stdin" in done["failure"]
    assert jobs.clusters() == []   # torn down all the same


def test_an_attached_launch_follows_the_logs_and_exits_with_the_outcome(jobs: Skyc) -> None:
    jobs.write("ok.yaml", "name: ok\nresources:\n  infra: local\nrun: echo hello-managed\n")
    ok = jobs.ok("jobs", "launch", "ok.yaml", "-y", timeout=180)
    assert "hello-managed" in ok.stdout and "managed job 1: SUCCEEDED" in ok.stderr

    jobs.write("bad.yaml", "name: bad\nresources:\n  infra: local\nrun: exit 3\n")
    bad = jobs("jobs", "launch", "bad.yaml", "-y", timeout=180)
    assert bad.returncode == 1 and "managed job 2: FAILED" in bad.stderr, str(bad)
    assert "exited with code 3" in bad.stderr
    table = jobs.ok("jobs", "queue").stdout
    assert "SUCCEEDED" in table and "FAILED" in table
