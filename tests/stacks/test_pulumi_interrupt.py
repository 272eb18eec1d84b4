"""Interrupting the Pulumi engine as Ctrl-C does (a managed job's cancel).

No Pulumi CLI can be installed here: the real Automation API runs
tests/support/pulumi_standin.py, a stand-in CLI whose ``STANDIN_SLOW_UP`` makes each
creation slow and which, on SIGINT, behaves as the real CLI does (lets the operation
in flight finish, starts no other, saves its state, exits "update canceled").
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pulumi_aws", reason="the Pulumi SDKs (skyc[pulumi]) are not installed")

from skyc.errors import EngineInterrupted
from skyc.stacks import open_engine, write_stack
from skyc.stacks.engine import ProgressEvent, interruptible
from tests.compiler.golden import compile_case
from tests.support.pulumi_standin import install
from tests.support.stack_inputs import with_network

CASE = Path(__file__).resolve().parents[1] / "fixtures" / "compile" / "aws" / "gpu_2node_spot"
SLOW_S = 30.0   # each creation; a regression waits for all of them, so kept short


@pytest.fixture
def standin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SKYC_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SKYC_PULUMI_ROOT", str(install(tmp_path / "standin")))
    log = tmp_path / "cli-calls.jsonl"
    monkeypatch.setenv("STANDIN_LOG", str(log))
    return log


def _engine(home: Path) -> tuple[Any, Any]:
    workspace = home / "clusters" / "gpu"
    stack = compile_case(CASE, workspace)
    write_stack(stack, workspace, with_network(stack, {"ssh_public_key": "ssh-ed25519 AAAA test"}),
                engine="pulumi")
    engine = open_engine("pulumi", workspace)
    engine.prepare(stack)
    return engine, stack


def _calls(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _state(home: Path) -> dict[str, Any]:
    state: dict[str, Any] = json.loads((home / "pulumi" / "standin-gpu.json").read_text())
    return state


@pytest.mark.slow
def test_interrupt_during_up_stops_pulumi_as_ctrl_c_does(
    standin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    engine, stack = _engine(home)
    monkeypatch.setenv("STANDIN_SLOW_UP", str(SLOW_S))
    cancel = threading.Event()
    started: list[str] = []

    asked: list[float] = []

    def progress(event: ProgressEvent) -> None:
        if event.kind == "start":
            started.append(event.address or "")
            asked.append(time.monotonic())
            cancel.set()           # cancelled while the first resource is being created

    diff = engine.plan()
    with interruptible(cancel), pytest.raises(EngineInterrupted, match="pulumi up"):
        engine.apply(diff, progress)
    took = time.monotonic() - asked[0]
    assert took < SLOW_S / 3, f"the interrupt took {took:.1f} s"
    assert len(started) == 1
    calls = _calls(standin)
    assert [c for c in calls if "signal" in c] == [
        {"signal": "SIGINT", "pid": next(c["pid"] for c in calls if "up" in c.get("argv", []))}]
    assert all(not _alive(c["pid"]) for c in calls)
    # the resource in flight finished and is in the state; nothing after it started
    state = _state(home)
    created = [r["urn"] for r in state["resources"] if not r["type"].startswith("pulumi:")]
    assert [urn.split("::", 2)[2] for urn in created] == started and len(stack.resources) > 1
    assert state["history"][-1]["result"] == "failed"
    assert "interrupted" in (engine.last_log.read_text() if engine.last_log else "")

    # what the attempt created is then destroyed, outside the interrupted scope
    monkeypatch.delenv("STANDIN_SLOW_UP")
    engine.destroy()
    assert _state(home)["resources"] == []


@pytest.mark.slow
def test_interrupt_before_the_command_starts_runs_nothing(
    standin: Path, tmp_path: Path
) -> None:
    engine, _ = _engine(tmp_path / "home")
    diff = engine.plan()
    cancel = threading.Event()
    cancel.set()
    before = len(_calls(standin))
    for step in (lambda: engine.apply(diff), engine.refresh, engine.destroy, engine.plan):
        with interruptible(cancel), pytest.raises(EngineInterrupted, match="before it started"):
            step()
    ops = {"preview", "up", "refresh", "destroy"}
    assert not [c for c in _calls(standin)[before:] if ops & set(c.get("argv", []))]


@pytest.mark.slow
def test_other_threads_commands_are_not_interrupted(
    standin: Path, tmp_path: Path
) -> None:
    engine, stack = _engine(tmp_path / "home")
    cancel = threading.Event()
    cancel.set()
    errors: list[BaseException] = []

    def other() -> None:
        try:
            with interruptible(threading.Event()):   # this thread's own, never set
                engine.apply(engine.plan())
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)

    with interruptible(cancel):                       # set in this thread only
        worker = threading.Thread(target=other)
        worker.start()
        worker.join(timeout=120)
    assert not worker.is_alive() and errors == []
    created = [r for r in _state(tmp_path / "home")["resources"]
               if not r["type"].startswith("pulumi:")]
    assert len(created) == len(stack.resources)
    assert not [c for c in _calls(standin) if "signal" in c]


def test_the_runner_starts_no_update_asked_to_stop_and_signals_no_ended_process(
    standin: Path, tmp_path: Path
) -> None:
    import subprocess

    from skyc.stacks.pulumi_command import InterruptibleCommand, stop

    command = InterruptibleCommand(root=str(tmp_path / "standin"))
    cancel = threading.Event()
    cancel.set()
    with interruptible(cancel), pytest.raises(EngineInterrupted, match="before it started"):
        command.run(["up", "--yes", "--stack", "gpu"], str(tmp_path), {})
    with interruptible(cancel):  # commands that change nothing still run
        assert command.run(["version"], str(tmp_path), {}).stdout.startswith("v")
    assert [c["argv"] for c in _calls(standin)] == [["version"], ["--non-interactive", "version"]]
    ended = subprocess.Popen(["true"])
    ended.wait()
    stop(ended)                  # already reaped: nothing is signalled, nothing waits
    assert ended.returncode == 0


@pytest.mark.slow
def test_ctrl_c_reaches_pulumi_once_and_waits_for_it(
    standin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C at skyc's terminal (KeyboardInterrupt here): pulumi runs in a session of
    its own, so it gets exactly one SIGINT, forwarded by skyc, which waits for it to
    save its state (a second SIGINT would make pulumi stop at once)."""
    import _thread

    home = tmp_path / "home"
    engine, _ = _engine(home)
    diff = engine.plan()
    monkeypatch.setenv("STANDIN_SLOW_UP", str(SLOW_S))

    def progress(event: ProgressEvent) -> None:
        if event.kind == "start":
            _thread.interrupt_main()      # as the terminal's Ctrl-C does to skyc

    with pytest.raises(KeyboardInterrupt):
        engine.apply(diff, progress)
    calls = _calls(standin)
    up = next(c for c in calls if "up" in c.get("argv", []))
    assert [c for c in calls if "signal" in c] == [{"signal": "SIGINT", "pid": up["pid"]}]
    assert not _alive(up["pid"])
    assert _state(home)["history"][-1]["result"] == "failed"   # it saved its state
