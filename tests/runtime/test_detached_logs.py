"""Logs tell the truth: each line of a detached job once, and each incarnation of a
cluster (apply, down, apply again) with logs of its own.

Real ``python -m skyc`` processes, the real node agent, real sshd for SSH clusters."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from skyc.model.nodes import ClusterInfo
from skyc.runtime.logs import JobLog
from tests.runtime.conftest import make_local_cluster
from tests.runtime.test_cli_jobs import save_cluster, skyc
from tests.support.sshd import SshdCluster

LINES = ("t1", "t2", "t3")
JOB = "for i in 1 2 3; do echo t$i; sleep 0.2; done"
SETUP_LINE = "set-up-once"
FINAL = ("SUCCEEDED", "FAILED", "CANCELLED", "FAILED_SETUP")


def wait_until(check: Callable[[], bool], timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return check()


def _watchers_under(root: Path) -> list[int]:
    """Pids of detached-job watchers whose command line names a path under ``root``."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            argv = (entry / "cmdline").read_bytes()
            if b"skyc.runtime.watch" in argv and str(root).encode() in argv:
                pids.append(int(entry.name))
    return pids


@pytest.fixture(autouse=True)
def no_stray_watchers(tmp_path: Path) -> Iterator[None]:
    """A watcher that never ends (it copies a log into itself) is stopped after its test."""
    yield
    for pid in _watchers_under(tmp_path):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _job_status(home: Path, cluster: str, job_id: int) -> str | None:
    try:
        table = json.loads((home / "logs" / cluster / "jobs.json").read_text())
    except (OSError, ValueError):
        return None
    return next((str(j["status"]) for j in table if j["job_id"] == job_id), None)


def _task(tmp_path: Path, nodes: int) -> Path:
    task = tmp_path / "task.yaml"
    task.write_text(f"name: lines\nnum_nodes: {nodes}\nsetup: echo {SETUP_LINE}\n"
                    f"run: |\n  {JOB}\n")
    return task


def _detach_and_check(home: Path, info: ClusterInfo, tmp_path: Path, nodes: int) -> None:
    save_cluster(home, info)
    out = skyc(home, "exec", info.name, str(_task(tmp_path, nodes)), "-d")
    assert out.returncode == 0, out.stderr
    assert "job 1 started" in out.stderr
    # The watcher records the outcome once it has followed the job to its end.
    ended = wait_until(lambda: _job_status(home, info.name, 1) in FINAL)
    job_dir = home / "logs" / info.name / "1"
    names = [n.name for n in sorted(info.nodes, key=lambda n: n.rank)][:nodes]
    for name in names:
        run = (job_dir / f"{name}.log").read_text().splitlines()
        assert run == list(LINES), (name, len(run), run[:6])
        setup = (job_dir / f"{name}.setup.log").read_text().splitlines()
        assert setup == [SETUP_LINE], (name, setup[:6])
    assert ended, _job_status(home, info.name, 1)
    assert not (job_dir / f"worker{nodes}.log").exists()
    shown = skyc(home, "logs", info.name, "1")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert len(lines) == nodes * (len(LINES) + 1), lines[:10]
    for name in names:
        mine = [ln.split(") ", 1)[1] for ln in lines if ln.startswith(f"({name}, ")]
        assert mine == [SETUP_LINE, *LINES], (name, mine[:10])


@pytest.mark.parametrize("nodes", [1, 2])
def test_detached_exec_on_local_keeps_each_line_once(
        skyc_home: Path, tmp_path: Path, nodes: int) -> None:
    _detach_and_check(skyc_home, make_local_cluster(tmp_path, nodes), tmp_path, nodes)


@pytest.mark.slow
@pytest.mark.parametrize("nodes", [1, 2])
def test_detached_exec_on_ssh_keeps_each_line_once(
        sshd2: SshdCluster, skyc_home: Path, tmp_path: Path, nodes: int) -> None:
    _detach_and_check(skyc_home, sshd2.cluster_info(), tmp_path, nodes)


def test_a_log_linked_already_is_not_written_into_itself(tmp_path: Path) -> None:
    source = tmp_path / "node" / "run.log"
    source.parent.mkdir()
    source.write_bytes(b"t1\n")
    first = JobLog(tmp_path / "job", None)
    first.sink("head", "(head, rank=0)", "run", source).flush()  # a detached run: linked
    later = JobLog(tmp_path / "job", None)  # its watcher, reading the node's log back
    out = later.sink("head", "(head, rank=0)", "run", source)
    out.feed(b"t1\n")
    out.flush()
    later.close()
    assert source.read_bytes() == b"t1\n"
    assert (tmp_path / "job" / "head.log").stat().st_ino == source.stat().st_ino


# A cluster applied, taken down and applied again ------------------------------

def _life_task(tmp_path: Path, word: str, code: int = 0) -> Path:
    task = tmp_path / f"{word}.yaml"
    task.write_text(f"name: life\nresources:\n  infra: local\n"
                    f"run: echo {word}; exit {code}\n")
    return task


def _ok(home: Path, *args: str) -> str:
    out = skyc(home, *args, cwd=home.parent)
    assert out.returncode == 0, (args, out.stdout, out.stderr)
    assert "Traceback" not in out.stderr
    return out.stdout


def _head_lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


needs_engine = pytest.mark.skipif(
    shutil.which("terraform") is None and shutil.which("tofu") is None,
    reason="the local infra's stack needs terraform or tofu")


@needs_engine
def test_logs_after_down_read_the_last_incarnation(skyc_home: Path, tmp_path: Path) -> None:
    task = _life_task(tmp_path, "first-life", code=3)
    assert skyc(skyc_home, "apply", str(task), "-c", "inc", "--yes").returncode == 3
    _ok(skyc_home, "down", "inc", "--yes")
    for args in (("logs", "inc"), ("logs", "inc", "1"), ("logs", "inc", "1", "--follow")):
        out = skyc(skyc_home, *args)
        assert out.returncode == 3, (args, out.stderr)  # the job's code, as recorded
        assert out.stdout.splitlines() == ["(head, rank=0) first-life"], out.stdout
        assert "cluster inc is down" in out.stderr, out.stderr
    missing = skyc(skyc_home, "logs", "inc", "7")
    assert missing.returncode == 1 and "no job 7" in missing.stderr
    assert "Traceback" not in missing.stderr


@needs_engine
def test_reapply_after_down_keeps_each_incarnation_apart(
        skyc_home: Path, tmp_path: Path) -> None:
    logs = skyc_home / "logs" / "inc"
    _ok(skyc_home, "apply", str(_life_task(tmp_path, "first-life")), "-c", "inc", "--yes")
    assert _head_lines(logs / "1" / "head.log") == ["first-life"]
    _ok(skyc_home, "down", "inc", "--yes")
    # Applied again: job ids start at 1 again, in logs of their own.
    _ok(skyc_home, "apply", str(_life_task(tmp_path, "second-life")), "-c", "inc", "--yes")
    assert _head_lines(logs / "1" / "head.log") == ["second-life"]
    table = json.loads((logs / "jobs.json").read_text())
    assert [(j["job_id"], j["status"]) for j in table] == [(1, "SUCCEEDED")]
    earlier = [p for p in logs.rglob("head.log") if p != logs / "1" / "head.log"]
    assert [_head_lines(p) for p in earlier] == [["first-life"]], earlier
    assert _ok(skyc_home, "logs", "inc", "1").splitlines() == ["(head, rank=0) second-life"]
    # Down again: the logs read are the last incarnation's.
    _ok(skyc_home, "down", "inc", "--yes")
    out = skyc(skyc_home, "logs", "inc")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["(head, rank=0) second-life"]


def test_logs_of_a_cluster_never_launched_is_still_an_error(skyc_home: Path) -> None:
    out = skyc(skyc_home, "logs", "nope")
    assert out.returncode == 1
    assert "no cluster named 'nope'" in out.stderr and "Traceback" not in out.stderr
