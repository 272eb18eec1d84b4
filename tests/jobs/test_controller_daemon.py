"""One managed-jobs controller process for many jobs (real skyc processes, the real
terraform binary on local stacks, the real node agent): every job is handed to the
same process with its own secrets over the controller's socket, no secret is left on
disk or in a process's argv or environment, two controllers started at once leave
one, and the controller exits once idle."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from tests.e2e.conftest import Skyc, files_containing, pid_alive, wait_until
from tests.jobs.conftest import daemon_pid, job, wait_for

SECRETS = ["tok-alpha-9131", "tok-bravo-2274", "tok-charlie-5562"]


def _controllers(home: Path) -> list[int]:
    """Every ``skyc jobs controller`` process of this SKYC_HOME."""
    want = f"SKYC_HOME={home}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            argv = Path(f"/proc/{name}/cmdline").read_bytes().split(b"\0")
            env = Path(f"/proc/{name}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[-3:] == [b"jobs", b"controller", b""] and want in env:
            found.append(int(name))
    return found


def _task(jobs: Skyc, go: Path, out: Path) -> None:
    jobs.write("sec.yaml", f"""\
name: sec
resources:
  infra: local
secrets:
  TOKEN: null
run: |
  while [ ! -f {go} ]; do sleep 0.2; done
  echo "$TOKEN" > {out}/$SKYC_MANAGED_JOB_ID
""")


def test_one_controller_supervises_every_job_with_its_own_secrets(
        jobs: Skyc, tmp_path: Path) -> None:
    go, out = tmp_path / "go", tmp_path / "out"
    out.mkdir()
    _task(jobs, go, out)
    # The first launch takes TOKEN from its environment, and starts the controller:
    # the controller's environment must not carry it.
    first = subprocess.run(
        [sys.executable, "-m", "skyc", "jobs", "launch", "sec.yaml", "-y", "-d",
         "--secret", "TOKEN"], cwd=jobs.cwd, env={**jobs.env, "TOKEN": SECRETS[0]},
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    for secret in SECRETS[1:]:
        jobs.ok("jobs", "launch", "sec.yaml", "-y", "-d", "--secret", f"TOKEN={secret}")
    for job_id in (1, 2, 3):
        wait_for(jobs, job_id, lambda j: j["status"] == "RUNNING")

    pid = daemon_pid(jobs.home)
    assert pid and _controllers(jobs.home) == [pid]
    assert {job(jobs, i)["controller_pid"] for i in (1, 2, 3)} == {pid}
    sock = jobs.home / "jobs" / "controller.sock"
    assert stat.S_ISSOCK(sock.stat().st_mode) and stat.S_IMODE(sock.stat().st_mode) == 0o600
    assert stat.S_IMODE(sock.parent.stat().st_mode) == 0o700
    proc_bytes = (Path(f"/proc/{pid}/cmdline").read_bytes()
                  + Path(f"/proc/{pid}/environ").read_bytes())
    state = (jobs.home / "state.db").read_bytes()
    for secret in SECRETS:
        assert secret.encode() not in proc_bytes
        assert secret.encode() not in state
        assert files_containing(jobs.home / "logs", secret.encode()) == []
        assert files_containing(jobs.home / "jobs", secret.encode()) == []

    go.touch()
    for job_id in (1, 2, 3):
        done = wait_for(jobs, job_id, lambda j: j["status"] in ("SUCCEEDED", "FAILED"))
        assert done["status"] == "SUCCEEDED", done
        assert (out / str(job_id)).read_text().strip() == SECRETS[job_id - 1]
    for secret in SECRETS:   # the logs saved after the runs hold none either
        assert files_containing(jobs.home, secret.encode()) == []
        for args in (("jobs", "logs", "1", "--controller"), ("jobs", "queue", "--format",
                                                              "json")):
            assert secret not in jobs.ok(*args).output
    assert jobs.clusters() == []

    # With nothing left to supervise it exits by itself (SKYC_JOBS_IDLE_S is 5 here).
    assert wait_until(lambda: not pid_alive(pid), timeout=30)
    assert not sock.exists() and daemon_pid(jobs.home) is None


def test_two_controllers_started_at_once_leave_one_and_each_job_runs_once(
        jobs: Skyc, tmp_path: Path) -> None:
    go, runs = tmp_path / "go", tmp_path / "runs"
    jobs.write("long.yaml", f"""\
name: long
resources:
  infra: local
run: |
  echo "$SKYC_MANAGED_JOB_ID" >> {runs}
  while [ ! -f {go} ]; do sleep 0.2; done
""")
    for _ in range(3):
        jobs.ok("jobs", "launch", "long.yaml", "-y", "-d")
    for job_id in (1, 2, 3):
        wait_for(jobs, job_id, lambda j: j["status"] == "RUNNING")
    first = daemon_pid(jobs.home)
    assert first
    os.kill(first, 9)
    assert wait_until(lambda: not pid_alive(first), timeout=10)

    both = [jobs.popen("jobs", "controller") for _ in range(2)]
    # One of them finds the other running and exits; the other takes every job over
    # once the dead controller's leases have expired.
    assert wait_until(lambda: any(p.poll() is not None for p in both), timeout=60)
    exited = next(p for p in both if p.poll() is not None)
    serving = next(p for p in both if p is not exited)
    assert exited.returncode == 0 and "already runs" in exited.communicate()[0]
    assert serving.poll() is None and daemon_pid(jobs.home) == serving.pid
    for job_id in (1, 2, 3):
        wait_for(jobs, job_id, lambda j: j["controller_pid"] == serving.pid, timeout=30)
    go.touch()
    for job_id in (1, 2, 3):
        done = wait_for(jobs, job_id, lambda j: j["status"] in ("SUCCEEDED", "FAILED"))
        assert done["status"] == "SUCCEEDED" and len(done["attempts"]) == 1, done
    assert sorted(runs.read_text().split()) == ["1", "2", "3"]   # none started twice
    assert _controllers(jobs.home) == [serving.pid]


def test_a_restarted_controller_gets_no_secret_from_the_environment_that_restarts_it(
        jobs: Skyc, tmp_path: Path) -> None:
    go, out = tmp_path / "go", tmp_path / "out"
    out.mkdir()
    _task(jobs, go, out)
    jobs.ok("jobs", "launch", "sec.yaml", "-y", "-d", "--secret", f"TOKEN={SECRETS[0]}")
    pid = wait_for(jobs, 1, lambda j: j["status"] == "RUNNING")["controller_pid"]
    os.kill(pid, 9)
    assert wait_until(lambda: not pid_alive(pid), timeout=10)

    # Whoever runs the next command has TOKEN in their environment.
    queue = subprocess.run(
        [sys.executable, "-m", "skyc", "jobs", "queue"], cwd=jobs.cwd,
        env={**jobs.env, "TOKEN": SECRETS[1]}, stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=120)
    assert "restarted it" in queue.stderr, queue.stderr
    assert wait_until(lambda: daemon_pid(jobs.home) not in (None, pid), timeout=30)
    new_pid = daemon_pid(jobs.home)
    environ = Path(f"/proc/{new_pid}/environ").read_bytes().split(b"\0")
    assert not any(e.startswith(b"TOKEN=") for e in environ)
    # It has not got the job's secret either: the job fails, naming it.
    done = wait_for(jobs, 1, lambda j: j["status"] in ("SUCCEEDED", "FAILED"), timeout=60)
    assert done["status"] == "FAILED" and "TOKEN" in done["failure"], done
    assert jobs.clusters() == []


def test_relative_paths_are_read_from_where_each_job_was_launched(
        jobs: Skyc, tmp_path: Path) -> None:
    go = tmp_path / "go"
    out = tmp_path / "out"
    out.mkdir()
    for name in ("first", "second"):
        project = tmp_path / name
        (project / "data").mkdir(parents=True)
        (project / "data" / "which").write_text(f"{name}-project\n")
        (project / "task.yaml").write_text(f"""\
name: {name}
workdir: data
resources:
  infra: local
run: |
  while [ ! -f {go} ]; do sleep 0.2; done
  cat which > {out}/{name}
""")
    # The controller starts from the first project's directory and keeps running while
    # the second job is launched from another one.
    for name in ("first", "second"):
        launched = subprocess.run(
            [sys.executable, "-m", "skyc", "jobs", "launch", "task.yaml", "-y", "-d"],
            cwd=tmp_path / name, env=jobs.env, stdin=subprocess.DEVNULL,
            capture_output=True, text=True, timeout=120)
        assert launched.returncode == 0, launched.stderr
    pids = {wait_for(jobs, i, lambda j: j["status"] == "RUNNING")["controller_pid"]
            for i in (1, 2)}
    assert pids == {daemon_pid(jobs.home)}
    go.touch()
    for job_id in (1, 2):
        done = wait_for(jobs, job_id, lambda j: j["status"] in ("SUCCEEDED", "FAILED"))
        assert done["status"] == "SUCCEEDED", done
    assert (out / "first").read_text() == "first-project\n"
    assert (out / "second").read_text() == "second-project\n"
