"""Cluster locks between real processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from skyc.errors import LockTimeout, StateError
from skyc.state.locks import cluster_lock, lock_path, read_holder

# Takes the lock, reports, holds it for HOLD seconds, reports the release.
_HOLDER = """
import json, sys, time
from skyc.state.locks import cluster_lock
from skyc.errors import LockTimeout
name, timeout, hold = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
waits = []
try:
    with cluster_lock(name, timeout=timeout, on_wait=waits.append):
        print(json.dumps({"acquired": time.time(), "waits": waits}), flush=True)
        time.sleep(hold)
        released = time.time()
    print(json.dumps({"released": released}), flush=True)
except LockTimeout as exc:
    print(json.dumps({"timeout": str(exc), "waits": waits}), flush=True)
    sys.exit(3)
"""


def _spawn(home: Path, name: str, timeout: float, hold: float) -> subprocess.Popen[str]:
    env = dict(os.environ, SKYC_HOME=str(home))
    return subprocess.Popen(
        [sys.executable, "-c", _HOLDER, name, str(timeout), str(hold)],
        stdout=subprocess.PIPE, text=True, env=env, cwd=Path(__file__).parents[2],
    )


def _first_line(proc: subprocess.Popen[str]) -> dict[str, object]:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, "the lock process printed nothing"
    return dict(json.loads(line))


def test_second_process_times_out_naming_the_holder(tmp_path: Path) -> None:
    holder = _spawn(tmp_path, "c1", timeout=5, hold=4)
    try:
        first = _first_line(holder)
        assert first["waits"] == []
        waiter = _spawn(tmp_path, "c1", timeout=0.5, hold=0)
        out, _ = waiter.communicate(timeout=30)
        result = json.loads(out.splitlines()[0])
        assert waiter.returncode == 3
        assert f"pid {holder.pid}" in result["timeout"]
        assert "c1" in result["timeout"]
        assert len(result["waits"]) == 1 and f"pid {holder.pid}" in result["waits"][0]
    finally:
        holder.wait(timeout=30)


def test_second_process_waits_then_proceeds(tmp_path: Path) -> None:
    holder = _spawn(tmp_path, "c1", timeout=5, hold=1.5)
    try:
        _first_line(holder)
        waiter = _spawn(tmp_path, "c1", timeout=30, hold=0)
        out, _ = waiter.communicate(timeout=60)
        acquired = json.loads(out.splitlines()[0])
        assert waiter.returncode == 0
        assert len(acquired["waits"]) == 1 and f"pid {holder.pid}" in acquired["waits"][0]
        released = _first_line(holder)["released"]
        assert isinstance(released, float)
        assert acquired["acquired"] >= released
    finally:
        holder.wait(timeout=30)


def test_other_clusters_are_independent(tmp_path: Path) -> None:
    holder = _spawn(tmp_path, "c1", timeout=5, hold=3)
    try:
        _first_line(holder)
        other = _spawn(tmp_path, "c2", timeout=0.5, hold=0)
        out, _ = other.communicate(timeout=30)
        assert other.returncode == 0
        assert json.loads(out.splitlines()[0])["waits"] == []
    finally:
        holder.wait(timeout=30)


def test_holder_record_written_and_cleared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKYC_HOME", str(tmp_path))
    with cluster_lock("c1", timeout=1) as path:
        assert path == tmp_path / "locks" / "c1.lock"
        holder = read_holder(path)
        assert holder is not None and holder["pid"] == os.getpid()
    assert read_holder(path) is None
    with cluster_lock("c1", timeout=0.1):  # released: can be taken again at once
        pass


def test_holder_command_omits_option_values() -> None:
    from skyc.state.locks import _command_summary

    argv = ["/usr/bin/skyc", "launch", "--env", "HF_TOKEN=abc", "--password", "pw", "t.yaml"]
    assert _command_summary(argv) == "skyc launch t.yaml"


def test_bad_cluster_name_is_a_state_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SKYC_HOME", str(tmp_path))
    with pytest.raises(StateError, match="invalid cluster name"):
        lock_path("../etc")


def test_timeout_in_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKYC_HOME", str(tmp_path))
    messages: list[str] = []
    start = time.monotonic()
    # the lock is not re-entrant: a second open file description waits
    with (
        cluster_lock("c1", timeout=1),
        pytest.raises(LockTimeout, match=f"pid {os.getpid()}"),
        cluster_lock("c1", timeout=0.3, on_wait=messages.append),
    ):
        pass
    assert 0.3 <= time.monotonic() - start < 5
    assert len(messages) == 1
