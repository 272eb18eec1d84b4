"""The Pulumi engine through the Automation API.

The ``pulumi`` CLI cannot be installed on these machines, so these tests run the real
Automation API (``pulumi.automation``) against tests/support/pulumi_standin.py: an
executable standing in for the CLI that records its argv, environment and working
directory and answers the commands the way the real CLI does. The last test is the
real thing, end to end, wherever a real ``pulumi`` is on PATH.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pulumi_aws", reason="the Pulumi SDKs (skyc[pulumi]) are not installed")

from skyc.compiler import classify_error
from skyc.errors import ApplyFailed, EngineError
from skyc.stacks import ProgressEvent, open_engine, write_stack
from tests.compiler.golden import compile_case, load
from tests.support.pulumi_standin import install
from tests.support.stack_inputs import with_network

CASE = Path(__file__).resolve().parents[1] / "fixtures" / "compile" / "aws" / "gpu_2node_spot"
KEY = "ssh-ed25519 AAAA test"
CAPACITY = ("creating EC2 Instance: operation error EC2: RunInstances, https response error "
            "StatusCode: 500, RequestID: 1, api error InsufficientInstanceCapacity: We currently "
            "do not have sufficient g5.xlarge capacity in the Availability Zone you requested")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SKYC_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def _workspace(home: Path) -> tuple[Path, Any]:
    workspace = home / "clusters" / "gpu"
    stack = compile_case(CASE, workspace)
    write_stack(stack, workspace, with_network(stack, {"ssh_public_key": KEY}), engine="pulumi")
    return workspace, stack


def _calls(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_missing_cli_is_a_clear_error_before_anything(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SKYC_PULUMI_ROOT", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    workspace, stack = _workspace(home)
    engine = open_engine("pulumi", workspace)
    engine.prepare(stack)                       # nothing to open without a CLI
    assert engine.plan().offline                # plan previews offline instead
    for step in (engine.init, lambda: engine.apply(engine.plan()), engine.outputs,
                 engine.destroy):
        with pytest.raises(EngineError, match="pulumi CLI was not found") as caught:
            step()
        assert caught.value.hint and "get.pulumi.com" in caught.value.hint
    assert not (home / "pulumi").exists() or not any((home / "pulumi").iterdir())


@pytest.mark.slow
def test_lifecycle_through_the_automation_api(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "cli-calls.jsonl"
    monkeypatch.setenv("SKYC_PULUMI_ROOT", str(install(tmp_path / "standin")))
    monkeypatch.setenv("STANDIN_LOG", str(log))
    workspace, stack = _workspace(home)
    engine = open_engine("pulumi", workspace)
    engine.prepare(stack)
    diff = engine.plan()
    assert not diff.offline and diff.summary() == {"create": len(stack.resources)}
    assert {c.address.rsplit("::", 1)[1] for c in diff.changes} == {
        r.key for r in stack.resources}
    events: list[ProgressEvent] = []
    engine.apply(diff, events.append)
    assert {e.address for e in events if e.kind == "complete"} >= {
        "aws:ec2/instance:Instance::node_0", "aws:ec2/instance:Instance::node_1"}
    assert events[-1].kind == "summary"
    assert set(engine.outputs()) == {"instance_ids", "private_ips", "public_ips", "ssh_user"}
    assert engine.plan().summary() == {"no-op": len(stack.resources)}
    assert engine.refresh().managed == len(stack.resources)
    engine.destroy()
    assert engine.refresh().managed == 0

    calls = _calls(log)
    commands = [c["argv"] for c in calls]
    assert ["version"] in commands
    assert any(a[1:3] == ["stack", "init"] and "passphrase" in a for a in commands)
    set_all = next(a for a in commands if a[1:3] == ["config", "set-all"])
    assert f"skyc:ssh_public_key={KEY}" in set_all
    assert {a[1] for a in commands if len(a) > 1} >= {"preview", "up", "refresh", "destroy"}
    passphrase = workspace / "keys" / "pulumi-passphrase"
    assert stat.S_IMODE(passphrase.stat().st_mode) == 0o600
    secret = passphrase.read_text().strip()
    for call in calls:
        assert secret not in json.dumps(call)
        if call["argv"] == ["version"]:   # run once per process, before the workspace
            continue
        assert call["cwd"] == str(workspace)
        assert call["env"]["PULUMI_BACKEND_URL"] == f"file://{home / 'pulumi'}"
        assert call["env"]["PULUMI_CONFIG_PASSPHRASE_FILE"] == str(passphrase)
    for path in workspace.rglob("*"):
        if path.is_file() and path != passphrase:
            assert secret not in path.read_text(errors="replace"), path
    ops = {p.name.split("-pulumi-")[-1] for p in (workspace / "logs").iterdir()}
    assert all("-pulumi-" in p.name for p in (workspace / "logs").iterdir()), ops
    assert ops >= {"preview.log", "up.log", "refresh.log", "destroy.log"}


@pytest.mark.slow
def test_failed_up_is_classified_like_terraform(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SKYC_PULUMI_ROOT", str(install(tmp_path / "standin")))
    monkeypatch.setenv("STANDIN_FAIL", CAPACITY)
    workspace, stack = _workspace(home)
    engine = open_engine("pulumi", workspace)
    engine.prepare(stack)
    with pytest.raises(ApplyFailed) as caught:
        engine.apply(engine.plan())
    [diag] = caught.value.diagnostics
    assert diag.engine == "pulumi" and diag.address and diag.address.endswith("::node_0")
    assert caught.value.log_file and caught.value.log_file.exists()
    _, placement, _, _ = load(CASE)
    error = classify_error("aws", caught.value.diagnostics, placement=placement)
    assert error is not None
    assert (error.code, error.scope, error.retryable) == (
        "InsufficientInstanceCapacity", "zone", True)
