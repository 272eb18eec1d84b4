"""Each engine maps the exceptions of what it drives at one boundary, by one table:
every type in the table comes out as the error its row names, with the original as its
cause; every exception class ``pulumi.automation`` defines is mapped (a new release's
new class fails here until it is); and what the table does not name (a ``ValueError``
of skyc's own) passes through untouched."""

from __future__ import annotations

import inspect
import subprocess
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

from skyc.errors import ApplyFailed, EngineError
from skyc.model.diagnostics import Diagnostic
from skyc.stacks import pulumi_engine, terraform
from skyc.stacks.engine_errors import ErrorTable, loaded_class
from skyc.stacks.pulumi_engine import PulumiEngine
from skyc.stacks.terraform import TerraformEngine

# Exceptions whose constructor needs more than a message.
SAMPLES: dict[type[BaseException], Callable[[], BaseException]] = {
    subprocess.TimeoutExpired: lambda: subprocess.TimeoutExpired(["terraform", "show"], 600),
    subprocess.CalledProcessError: lambda: subprocess.CalledProcessError(1, ["terraform"]),
}


def instance(cls: type[BaseException]) -> BaseException:
    """An exception of class ``cls``, whatever its constructor takes."""
    if cls in SAMPLES:
        return SAMPLES[cls]()
    try:
        return cls("code: 1\nstderr: error: boom")
    except TypeError:
        exc = cls.__new__(cls)
        exc.args = ("boom",)
        return exc


def raised_through(boundary: AbstractContextManager[None], exc: BaseException) -> BaseException:
    with pytest.raises(BaseException) as caught, boundary:
        raise exc
    return caught.value


Boundary = Callable[[Path], AbstractContextManager[None]]


def _terraform(workspace: Path) -> AbstractContextManager[None]:
    return TerraformEngine(workspace, binary="/usr/bin/terraform")._errors("plan")


def _pulumi(workspace: Path) -> AbstractContextManager[None]:
    return PulumiEngine(workspace)._errors(f"open stack {workspace.name}")


def _pulumi_update(workspace: Path) -> AbstractContextManager[None]:
    diagnostics = [Diagnostic(engine="pulumi", summary="api error InsufficientCapacity")]
    return PulumiEngine(workspace)._update_errors("up", diagnostics)


# Each engine's tables, with their boundaries as the engines open them.
BOUNDARIES: dict[str, tuple[ErrorTable, Boundary]] = {
    "terraform": (terraform.ERRORS, _terraform),
    "pulumi": (pulumi_engine.ERRORS, _pulumi),
    "pulumi-update": (pulumi_engine.UPDATE_ERRORS, _pulumi_update),
}
PULUMI_TABLES = ["pulumi", "pulumi-update"]


def _needs(table: str) -> None:
    if table.startswith("pulumi"):
        pytest.importorskip("pulumi.automation")


@pytest.mark.parametrize("table", list(BOUNDARIES))
def test_every_type_in_the_table_comes_out_as_its_error(table: str, tmp_path: Path) -> None:
    _needs(table)
    errors, boundary = BOUNDARIES[table]
    workspace = tmp_path / "c1"
    for name, rule in errors.rules.items():
        cls = loaded_class(name)
        assert cls is not None, f"{table}: {name} names no class"
        exc = instance(cls)
        error = raised_through(boundary(workspace), exc)
        assert type(error) is rule.error and isinstance(error, EngineError), (name, error)
        assert error.__cause__ is exc, name
        if isinstance(error, ApplyFailed):
            assert error.diagnostics and "InsufficientCapacity" in str(error)
        else:
            assert "c1" in str(error) or "pulumi CLI" in str(error), (name, str(error))


def _automation_exceptions() -> list[type[BaseException]]:
    auto = pytest.importorskip("pulumi.automation")
    return sorted((v for n, v in vars(auto).items()
                   if not n.startswith("_") and inspect.isclass(v)
                   and issubclass(v, BaseException) and v.__module__.startswith("pulumi")),
                  key=lambda c: c.__name__)


@pytest.mark.parametrize("table", PULUMI_TABLES)
def test_every_exception_pulumi_automation_defines_is_mapped(table: str,
                                                             tmp_path: Path) -> None:
    classes = _automation_exceptions()
    assert {"CommandError", "ConcurrentUpdateError", "StackNotFoundError",
            "InvalidVersionError"} <= {c.__name__ for c in classes}
    errors, boundary = BOUNDARIES[table]
    unmapped = [c.__name__ for c in classes if errors.rule_for(instance(c)) is None]
    assert unmapped == [], f"pulumi.automation exceptions {table} does not map: {unmapped}"
    for cls in classes:
        exc = instance(cls)
        error = raised_through(boundary(tmp_path / "c1"), exc)
        assert isinstance(error, EngineError) and error.__cause__ is exc, cls


def test_a_failing_update_is_apply_failed_and_opening_a_stack_is_not(tmp_path: Path) -> None:
    from pulumi.automation import CommandError, ConcurrentUpdateError

    update = pulumi_engine.UPDATE_ERRORS
    assert update.rule_for(ConcurrentUpdateError("locked")) is update.rules[
        "pulumi.automation.CommandError"]
    assert update.rules["pulumi.automation.CommandError"].error is ApplyFailed
    error = raised_through(_pulumi(tmp_path / "c1"), CommandError("stderr: no backend"))
    assert type(error) is EngineError and "could not open stack c1" in str(error)


@pytest.mark.parametrize("table", list(BOUNDARIES))
def test_what_the_table_does_not_name_passes_through(table: str, tmp_path: Path) -> None:
    _needs(table)
    boundary = BOUNDARIES[table][1]
    ours = ValueError("a bug of skyc's own")
    assert raised_through(boundary(tmp_path), ours) is ours
    already = EngineError("said by skyc")
    assert raised_through(boundary(tmp_path), already) is already
    stop = KeyboardInterrupt()
    assert raised_through(boundary(tmp_path), stop) is stop


def test_the_tables_import_no_library() -> None:
    code = ("import sys\n"
            "import skyc.stacks.terraform as t, skyc.stacks.pulumi_engine as p\n"
            "for table in (t.ERRORS, p.ERRORS, p.UPDATE_ERRORS):\n"
            "    assert table.rule_for(FileNotFoundError()) is not None\n"
            "    assert table.rule_for(ValueError()) is None\n"
            "assert 'pulumi' not in sys.modules\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]


# -- at the points where each engine calls what it drives --------------------------------


def test_terraform_that_cannot_start_names_the_command_and_the_stack(tmp_path: Path) -> None:
    workspace = tmp_path / "c1"
    workspace.mkdir()
    engine = TerraformEngine(workspace, binary=str(tmp_path / "no-terraform"))
    for step in (engine.init, engine.outputs):
        with pytest.raises(EngineError, match=r"terraform (init|output) of stack c1: cannot "
                                              r"run .*no-terraform") as caught:
            step()
        assert isinstance(caught.value.__cause__, FileNotFoundError)


class _Stack:
    """A Pulumi stack whose calls fail as the Automation API fails them."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def up(self, **kwargs: Any) -> Any:
        raise self.exc

    def outputs(self) -> Any:
        raise self.exc


def test_pulumi_calls_fail_through_their_boundary(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from pulumi.automation import CommandError, StackNotFoundError

    monkeypatch.setenv("SKYC_HOME", str(tmp_path / "home"))
    engine = PulumiEngine(tmp_path / "c1")
    failing = _Stack(CommandError("code: 255\nstderr: error: the cloud said no"))
    monkeypatch.setattr(engine, "_stack", lambda: failing)
    with pytest.raises(ApplyFailed, match="pulumi up failed: stderr: error: the cloud") as up:
        engine.apply(engine_diff())
    assert up.value.__cause__ is failing.exc
    assert up.value.log_file is not None and up.value.log_file.exists()
    failing.exc = StackNotFoundError("stderr: no stack named c1")
    with pytest.raises(EngineError, match="could not read the outputs of stack c1") as out:
        engine.outputs()
    assert out.value.__cause__ is failing.exc
    failing.exc = ValueError("a bug of skyc's own")
    with pytest.raises(ValueError, match="own"):
        engine.apply(engine_diff())


def engine_diff() -> Any:
    from skyc.stacks.engine import StackDiff

    return StackDiff()
