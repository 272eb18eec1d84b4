"""Cluster locks in a PostgreSQL state, between real processes (each its own
``SKYC_HOME``, as on two machines, and the same ``SKYC_STATE_URL``): exclusive and
shared, who holds them, ``--lock-timeout``, and a holder killed mid-hold."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from skyc.errors import LockTimeout, StateError
from skyc.state.locks import cluster_lock, lock_held, lock_path, read_holder
from tests.support.postgres import PASSWORD

ROOT = Path(__file__).resolve().parents[2]

# Takes the lock as `skyc apply NAME.yaml` (or `skyc exec NAME` when shared) would,
# reports each step as one JSON line, holds it for HOLD seconds.
_HOLDER = """
import json, sys, time
from skyc.state.locks import cluster_lock
from skyc.errors import LockTimeout
name, timeout, hold, mode = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
shared = mode == "shared"
sys.argv = (["/usr/bin/skyc", "exec", "--lock-timeout", "9", name, "echo hi"] if shared
            else ["/usr/bin/skyc", "apply", "--lock-timeout", "9", f"{name}.yaml"])
def say(**doc):
    print(json.dumps(doc), flush=True)
waits = []
def on_wait(message):
    waits.append(message)
    say(waiting=message, at=time.time())
try:
    with cluster_lock(name, timeout=timeout, on_wait=on_wait, shared=shared):
        say(acquired=time.time(), waits=waits)
        time.sleep(hold)
        released = time.time()
    say(released=released)
except LockTimeout as exc:
    say(timeout=str(exc), waits=waits)
    sys.exit(3)
"""


def _home(tmp_path: Path, user: str) -> Path:
    home = tmp_path / user
    home.mkdir()
    (home / "config.yaml").write_text(f"user: {user}\n")
    return home


def _spawn(home: Path, url: str, name: str, *, timeout: float, hold: float,
           shared: bool = False) -> subprocess.Popen[str]:
    env = dict(os.environ, SKYC_HOME=str(home), SKYC_STATE_URL=url)
    return subprocess.Popen(
        [sys.executable, "-c", _HOLDER, name, str(timeout), str(hold),
         "shared" if shared else "exclusive"],
        stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT)


def _line(proc: subprocess.Popen[str]) -> dict[str, Any]:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, f"the lock process printed nothing (exit {proc.poll()})"
    return dict(json.loads(line))


def _finish(proc: subprocess.Popen[str], wait: float = 0.0) -> None:
    """Ends ``proc``: after ``wait`` seconds, killed if it still runs."""
    try:
        proc.wait(timeout=wait or 0.01)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=30)
    if proc.stdout is not None:
        proc.stdout.close()


def _holder_words(pid: int) -> tuple[str, ...]:
    return (f"alice@{socket.gethostname()}", "skyc apply c1.yaml", f"pid {pid}", "since ")


def test_waiter_names_the_holder_then_proceeds(tmp_path: Path, postgres_url: str) -> None:
    holder = _spawn(_home(tmp_path, "alice"), postgres_url, "c1", timeout=5, hold=4)
    waiter = None
    try:
        assert _line(holder)["waits"] == []
        waiter = _spawn(_home(tmp_path, "bob"), postgres_url, "c1", timeout=30, hold=0)
        waiting = _line(waiter)["waiting"]
        assert waiting.startswith("cluster 'c1' is locked by alice@")
        assert all(word in waiting for word in _holder_words(holder.pid)), waiting
        acquired = _line(waiter)
        released = _line(holder)["released"]
        assert acquired["acquired"] >= released
        assert acquired["acquired"] - released < 2
    finally:
        _finish(holder, wait=30)
        if waiter is not None:
            _finish(waiter, wait=30)
    assert waiter.returncode == 0


def test_lock_timeout_names_the_holder_not_the_password(tmp_path: Path,
                                                        postgres_url: str) -> None:
    holder = _spawn(_home(tmp_path, "alice"), postgres_url, "c1", timeout=5, hold=30)
    try:
        _line(holder)
        start = time.monotonic()
        waiter = _spawn(_home(tmp_path, "bob"), postgres_url, "c1", timeout=0.5, hold=0)
        out, _ = waiter.communicate(timeout=60)
        result = json.loads(out.splitlines()[-1])
        assert waiter.returncode == 3
        message = result["timeout"]
        assert message.startswith("cluster 'c1' is busy: alice@")
        assert all(word in message for word in _holder_words(holder.pid)), message
        assert "gave up after 0.5s" in message
        assert "postgresql://skyc:***@127.0.0.1" in message and PASSWORD not in message
        assert time.monotonic() - start < 20
    finally:
        _finish(holder)


def test_shared_locks_coexist_and_an_exclusive_waits_for_them(
        tmp_path: Path, postgres_url: str) -> None:
    home = _home(tmp_path, "alice")
    first = _spawn(home, postgres_url, "c1", timeout=5, hold=4, shared=True)
    procs = [first]
    try:
        _line(first)
        second = _spawn(home, postgres_url, "c1", timeout=0.5, hold=0, shared=True)
        procs.append(second)
        assert _line(second)["waits"] == []  # at once, beside the first
        apply = _spawn(_home(tmp_path, "bob"), postgres_url, "c1", timeout=30, hold=0)
        procs.append(apply)
        waiting = _line(apply)["waiting"]
        assert "skyc exec" in waiting and ", shared)" in waiting, waiting
        acquired = _line(apply)["acquired"]
        assert acquired >= _line(first)["released"]
    finally:
        for proc in procs:
            _finish(proc, wait=30)
    assert [p.returncode for p in procs] == [0, 0, 0]


def test_a_shared_lock_waits_for_an_exclusive_one(tmp_path: Path, postgres_url: str) -> None:
    holder = _spawn(_home(tmp_path, "alice"), postgres_url, "c1", timeout=5, hold=30)
    try:
        _line(holder)
        job = _spawn(_home(tmp_path, "bob"), postgres_url, "c1", timeout=0.3, hold=0,
                     shared=True)
        out, _ = job.communicate(timeout=60)
        assert job.returncode == 3
        assert "skyc apply c1.yaml" in json.loads(out.splitlines()[-1])["timeout"]
    finally:
        _finish(holder)


def test_a_killed_holder_releases_its_lock(tmp_path: Path, postgres_url: str) -> None:
    holder = _spawn(_home(tmp_path, "alice"), postgres_url, "c1", timeout=5, hold=120)
    waiter = None
    try:
        _line(holder)
        waiter = _spawn(_home(tmp_path, "bob"), postgres_url, "c1", timeout=60, hold=0)
        assert "alice@" in _line(waiter)["waiting"]
        killed = time.time()
        os.kill(holder.pid, signal.SIGKILL)
        acquired = _line(waiter)["acquired"]
        assert acquired - killed < 2.5, acquired - killed
    finally:
        _finish(holder)
        if waiter is not None:
            _finish(waiter, wait=30)
    assert waiter.returncode == 0
    # the waiter's release took the dead holder's row away with its own
    assert _raw(postgres_url, "SELECT count(*) FROM skyc_lock_holders") == [(0,)]


def _use(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, url: str) -> None:
    monkeypatch.setenv("SKYC_HOME", str(_home(tmp_path, "carol")))
    monkeypatch.setenv("SKYC_STATE_URL", url)


def test_in_process_holder_record_lock_held_and_no_reentry(
        tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _use(monkeypatch, tmp_path, postgres_url)
    path = lock_path("c1")
    assert read_holder(path) is None and not lock_held("c1")
    with cluster_lock("c1", timeout=1) as held:
        assert held == path and not path.exists()  # no file: the lock is in the database
        record = read_holder(path)
        assert record is not None
        assert (record["pid"], record["who"], record["mode"]) == (os.getpid(), "carol",
                                                                  "exclusive")
        assert abs(record["since"] - time.time()) < 60
        assert lock_held("c1") and not lock_held("c2")
        messages: list[str] = []
        start = time.monotonic()
        with pytest.raises(LockTimeout, match=f"pid {os.getpid()}"), \
                cluster_lock("c1", timeout=0.3, on_wait=messages.append):
            pass
        assert 0.3 <= time.monotonic() - start < 5
        assert len(messages) == 1 and "carol@" in messages[0]
    assert read_holder(path) is None and not lock_held("c1")
    with cluster_lock("c1", timeout=0), cluster_lock("c2", timeout=0, shared=True):
        assert lock_held("c1") and not lock_held("c2")  # a shared holder is no apply
        assert read_holder(lock_path("c2")) is not None
    assert _raw(postgres_url, "SELECT count(*) FROM skyc_lock_holders") == [(0,)]
    # The connection kept for the next lock holds none meanwhile ...
    assert _raw(postgres_url, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"
                ) == [(0,)]
    # ... and one the server dropped in between is made again (as is the one that asks
    # who holds a lock).
    dropped = _raw(postgres_url, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                   "WHERE application_name = 'skyc lock' AND datname = current_database()")
    assert dropped == [(True,), (True,)]
    with cluster_lock("c1", timeout=0):
        assert lock_held("c1")


def _raw(url: str, sql: str, args: tuple[object, ...] = ()) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        cur = conn.execute(sql, args)
        return list(cur.fetchall()) if cur.description else []


def test_a_dead_holders_row_is_ignored_and_cleaned(
        tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _use(monkeypatch, tmp_path, postgres_url)
    with cluster_lock("c1", timeout=0):  # makes the table
        pass
    _raw(postgres_url, "INSERT INTO skyc_lock_holders VALUES ('c1', 'exclusive', 'ghost', "
         "'h', 1, 'skyc apply', 0, 2147483000)")
    assert read_holder(lock_path("c1")) is None
    assert _raw(postgres_url, "SELECT count(*) FROM skyc_lock_holders") == [(0,)]
    with cluster_lock("c1", timeout=0):  # nobody holds it: the row held nothing
        pass


def test_an_unreachable_database_is_a_state_error_without_the_password(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    _use(monkeypatch, tmp_path, f"postgresql://skyc:{PASSWORD}@127.0.0.1:{port}/db")
    with pytest.raises(StateError) as caught, cluster_lock("c1", timeout=1):
        pass
    assert f"postgresql://skyc:***@127.0.0.1:{port}/db" in str(caught.value)
    assert PASSWORD not in str(caught.value) + str(caught.value.hint)
