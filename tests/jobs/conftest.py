"""Managed-job fixtures: ``python -m skyc`` as real subprocesses on the ``local`` infra,
with a short poll interval, lease and controller idle time, and no controller left
running afterwards."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import (
    Skyc,
    skyc,  # noqa: F401 - the fixture this one extends
)


@pytest.fixture
def jobs(skyc: Skyc) -> Iterator[Skyc]:  # noqa: F811
    skyc.env.update({"SKYC_JOBS_POLL_S": "0.3", "SKYC_JOBS_LEASE_S": "3",
                     "SKYC_JOBS_IDLE_S": "5"})
    try:
        yield skyc
    finally:
        stop_controllers(skyc.home)


TERMINAL = {"SUCCEEDED", "FAILED", "FAILED_SETUP", "FAILED_NO_RESOURCE", "CANCELLED"}


def daemon_pid(home: Path) -> int | None:
    """The managed-jobs controller's pid while one holds its lock, else None."""
    lock = home / "jobs" / "controller.lock"
    try:
        with lock.open() as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return int(lock.read_text().split()[0])
            fcntl.flock(fh, fcntl.LOCK_UN)
    except (OSError, ValueError, IndexError):
        return None
    return None


def stop_controllers(home: Path) -> None:
    """SIGKILL the controller and any foreground one of an unfinished job (read from the
    state database directly: a `skyc jobs` command would start the controller again)."""
    pids = {daemon_pid(home)}
    db = home / "state.db"
    if db.exists():
        with contextlib.closing(sqlite3.connect(db)) as conn:
            rows = conn.execute("SELECT controller_pid, status FROM managed_jobs").fetchall()
        pids |= {pid for pid, status in rows if status not in TERMINAL}
    for pid in pids - {None}:
        with _suppress():
            os.kill(pid, signal.SIGKILL)  # type: ignore[arg-type]


class _suppress:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return exc[0] is not None and issubclass(exc[0], OSError)  # type: ignore[arg-type]


def queue(runner: Skyc) -> list[dict[str, Any]]:
    result = runner("jobs", "queue", "--format", "json")
    assert result.returncode == 0, str(result)
    doc: list[dict[str, Any]] = json.loads(result.stdout)["jobs"]
    return doc


def job(runner: Skyc, job_id: int) -> dict[str, Any]:
    return next(j for j in queue(runner) if j["id"] == job_id)


def wait_for(runner: Skyc, job_id: int, check: Any,
             timeout: float = 120.0) -> dict[str, Any]:
    """Poll the job until ``check(job)``; fail with the controller's log otherwise."""
    deadline = time.monotonic() + timeout
    while True:
        doc = job(runner, job_id)
        if check(doc):
            return doc
        if time.monotonic() > deadline:
            log = runner("jobs", "logs", str(job_id), "--controller").stdout
            raise AssertionError(f"job {job_id} never got there: {doc}\n{log}")
        time.sleep(0.3)


def node_pids(node_dir: Path) -> list[int]:
    """Every process of a local node: they all run with HOME set to its directory."""
    want = f"HOME={node_dir}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            env = Path(f"/proc/{name}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if want in env:
            found.append(int(name))
    return found


def kill_node(node_dir: Path) -> int:
    """A simulated preemption: SIGKILL every process of the node (the agent's
    supervisor included, so no exit code is ever written). How many were killed."""
    pids = node_pids(node_dir)
    for pid in pids:
        with _suppress():
            os.kill(pid, signal.SIGKILL)
    return len(pids)
