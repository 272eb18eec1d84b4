"""The terraform engine driving the real binary on provider-free stacks."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from skyc.errors import ApplyFailed, EngineError
from skyc.stacks import LocalCommand, Output, ProgressEvent, Ref, Resource, Stack, emit, write_stack
from skyc.stacks.terraform import TerraformEngine, find_binary, parse_plan_json
from tests.support.terraform import requires_terraform


def _stack(*commands: str, value: str = "v1") -> Stack:
    stack = Stack(name="t", cloud="local")
    for i, command in enumerate(commands):
        stack.add(Resource(key=f"r{i}", types={"terraform": "terraform_data"},
                           properties={"input": value},
                           commands=[LocalCommand(command=command)]))
    stack.outputs = {"value": Output(value=Ref(resource="r0", attribute="output"))}
    return stack


def test_missing_binary_says_how_to_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SKYC_TERRAFORM", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(EngineError, match="neither terraform nor tofu") as caught:
        find_binary()
    assert caught.value.hint and "SKYC_TERRAFORM" in caught.value.hint
    monkeypatch.setenv("SKYC_TERRAFORM", "/nonexistent/terraform")
    with pytest.raises(EngineError, match="SKYC_TERRAFORM"):
        TerraformEngine(Path("/tmp"))


def test_plan_json_actions() -> None:
    doc = {"resource_changes": [
        {"address": "b.x", "type": "b", "change": {"actions": ["delete", "create"]}},
        {"address": "a.x", "type": "a", "change": {"actions": ["create", "delete"]}},
        {"address": "c.x", "type": "c", "change": {"actions": ["no-op"]}},
        {"address": "d.x", "type": "d", "change": {"actions": ["update"]}},
    ]}
    changes = parse_plan_json(doc)
    assert [(c.address, c.action) for c in changes] == [
        ("a.x", "replace"), ("b.x", "replace"), ("c.x", "no-op"), ("d.x", "update")]


def test_emitted_stack_is_sorted_json() -> None:
    text = emit(_stack("true"), "terraform")["main.tf.json"]
    assert text.endswith("\n")
    assert text == json.dumps(json.loads(text), indent=2, sort_keys=True) + "\n"


@requires_terraform
def test_plan_apply_update_outputs(tmp_path: Path) -> None:
    write_stack(_stack("true"), tmp_path)
    engine = TerraformEngine(tmp_path)
    engine.init()
    diff = engine.plan()
    assert diff.summary() == {"create": 1}
    events: list[ProgressEvent] = []
    engine.apply(diff, events.append)
    assert [e.kind for e in events if e.address == "terraform_data.r0"][:1] == ["start"]
    assert any(e.kind == "complete" for e in events)
    assert engine.outputs() == {"value": "v1"}
    assert not engine.plan().has_changes
    write_stack(_stack("true", value="v2"), tmp_path)
    assert engine.plan().summary() == {"update": 1}
    ops = sorted(p.name.split("-", 1)[1] for p in (tmp_path / "logs").iterdir())
    assert {"init.log", "plan.log", "apply.log", "show.log", "output.log"} <= set(ops)


@requires_terraform
def test_failed_apply_carries_diagnostics(tmp_path: Path) -> None:
    write_stack(_stack("echo boom >&2; exit 3"), tmp_path)
    engine = TerraformEngine(tmp_path)
    engine.init()
    with pytest.raises(ApplyFailed) as caught:
        engine.apply(engine.plan())
    assert caught.value.diagnostics
    assert caught.value.diagnostics[0].address == "terraform_data.r0"
    assert caught.value.diagnostics[0].engine == "terraform"
    assert caught.value.log_file is not None and caught.value.log_file.exists()


@requires_terraform
def test_apply_timeout_stops_terraform(tmp_path: Path) -> None:
    write_stack(_stack("sleep 60"), tmp_path)
    engine = TerraformEngine(tmp_path, apply_timeout_s=3)
    engine.init()
    diff = engine.plan()
    started = time.monotonic()
    with pytest.raises(EngineError, match="did not finish within 3 s"):
        engine.apply(diff)
    assert time.monotonic() - started < 40


@requires_terraform
def test_engines_meet_the_protocol(tmp_path: Path) -> None:
    from skyc.stacks import engine_names, open_engine

    for name in engine_names():
        engine = open_engine(name, tmp_path)
        assert engine.name == name and engine.workspace == tmp_path
        for method in ("init", "prepare", "plan", "apply", "outputs", "refresh", "destroy"):
            assert callable(getattr(engine, method)), (name, method)


@requires_terraform
def test_nodes_of_a_counted_stack_move_instead_of_being_replaced(tmp_path: Path) -> None:
    # A local cluster's stack as it was written when nodes were one counted resource.
    old = {"resource": {"terraform_data": {"node": {
        "count": 2,
        "input": {"dir": '${format("nodes/%s", count.index == 0 ? "head" : '
                         'format("worker%d", count.index))}', "labels": {"skyc-cluster": "m"}},
    }}}}
    (tmp_path / "main.tf.json").write_text(json.dumps(old))
    engine = TerraformEngine(tmp_path)
    engine.init()
    engine.apply(engine.plan())
    from skyc.compiler import build_stack
    from skyc.model.plan import Placement
    from skyc.settings.config import SkycConfig
    from skyc.task.candidate import ResourceCandidate

    stack = build_stack("m", Placement(cloud="local", num_nodes=3, hourly_cost=0),
                        ResourceCandidate(index=0), config=SkycConfig(), workspace=tmp_path)
    write_stack(stack, tmp_path)
    diff = engine.plan()
    actions = {c.address: c.action for c in diff.changes}
    assert actions == {"terraform_data.node_0": "no-op", "terraform_data.node_1": "no-op",
                       "terraform_data.node_2": "create"}, actions
