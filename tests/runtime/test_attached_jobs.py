"""An attached job says its id when it starts, Ctrl-C says the job runs on and how to
follow or cancel it, and a job cancelled while it is followed is recorded CANCELLED
(the real CLI, on a local cluster)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.terraform import requires_terraform

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [requires_terraform, pytest.mark.timeout(300)]


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "SKYC_HOME": str(home), "PYTHONPATH": str(ROOT), "COLUMNS": "200"}


def _skyc(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "skyc", *args], capture_output=True,
                          text=True, env=_env(home), timeout=240, cwd=ROOT)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    home = tmp_path / "home"
    task = tmp_path / "c.yaml"
    task.write_text("name: att\nresources: {infra: local}\nrun: echo first\n")
    out = _skyc(home, "apply", str(task), "--yes")
    assert out.returncode == 0, out.stderr
    assert "Job ID: 1 (on att)" in out.stderr
    yield home, "att"
    _skyc(home, "down", "att", "--yes")


def _start(home: Path, command: str) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen([sys.executable, "-m", "skyc", "exec", "att", command],
                            env=_env(home), cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if line.startswith("Job ID: "):
            return proc, int(line.split()[2])
        assert line or proc.poll() is None, "exec ended before its job started"
    proc.kill()
    raise AssertionError("no Job ID line within 60 s")


def _status(home: Path, job_id: int) -> str:
    out = _skyc(home, "queue", "att", "--format", "json")
    assert out.returncode == 0, out.stderr
    jobs = json.loads(out.stdout)["jobs"]
    return str(next(j["status"] for j in jobs if int(j["id"]) == job_id))


def test_attached_exec_says_its_job_id(cluster: tuple[Path, str]) -> None:
    home, _ = cluster
    out = _skyc(home, "exec", "att", "echo second")
    assert out.returncode == 0, out.stderr
    assert "Job ID: 2 (on att)" in out.stderr and "second" in out.stdout


def test_ctrl_c_says_the_job_keeps_running_and_how_to_reach_it(
    cluster: tuple[Path, str]
) -> None:
    home, _ = cluster
    proc, job_id = _start(home, "sleep 60")
    time.sleep(1)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert f"job {job_id} on att keeps running" in err
    assert f"skyc logs att {job_id} --follow" in err and f"skyc cancel att {job_id}" in err
    assert _status(home, job_id) == "RUNNING"
    assert _skyc(home, "cancel", "att", str(job_id)).returncode == 0


def test_a_job_cancelled_while_followed_is_recorded_cancelled(
    cluster: tuple[Path, str]
) -> None:
    home, _ = cluster
    proc, job_id = _start(home, "sleep 60")
    time.sleep(1)
    cancel = _skyc(home, "cancel", "att", str(job_id))
    assert cancel.returncode == 0, cancel.stderr
    _, err = proc.communicate(timeout=60)
    assert proc.returncode != 0
    assert f"job {job_id} on cluster att was cancelled" in err, err
    assert _status(home, job_id) == "CANCELLED"


def test_a_detached_apply_records_the_jobs_end_without_queue(tmp_path: Path) -> None:
    """`apply -d` starts the same watcher as `exec -d`: status sees the job end with no
    `skyc queue` in between."""
    home = tmp_path / "home"
    task = tmp_path / "d.yaml"
    task.write_text("name: det\nresources: {infra: local}\nrun: sleep 1; echo done\n")
    out = _skyc(home, "apply", str(task), "--yes", "-d")
    assert out.returncode == 0, out.stderr
    try:
        deadline = time.monotonic() + 60
        last = None
        while time.monotonic() < deadline:
            doc = json.loads(_skyc(home, "status", "--format", "json").stdout)
            last = doc["clusters"][0]["last_job"]
            if last and last["status"] != "RUNNING":
                break
            time.sleep(0.5)
        assert last is not None and last["status"] == "SUCCEEDED", last
    finally:
        _skyc(home, "down", "det", "--yes")
