"""Every command's help, walked recursively through the real typer/click tree: plain
metavars (TASK, CLUSTER, N, KEY=VAL), never Python types (``<str>``, ``<list[str]>``)
nor a parameter's Python name (``{task_file}``); choices are listed."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from skyc.cli import app

# A parameter's Python name in braces ({task_file}); a Python or click type in angle
# brackets (<str>, <list[str]>, <path>, <choice...>, <Enum>); click's own type names.
_PARAM_NAME = re.compile(r"\{[a-z][a-z0-9_]*\}")
_PYTHON_TYPE = re.compile(
    r"(?i:<(?:str|int|float|bool|bytes|path|choice|list\[|dict\[|tuple\[|set\[|optional|"
    r"uuid|datetime|enum|filename|file|text|integer|boolean)[^>]*>)"
    r"|\b(?:INTEGER|TEXT|FLOAT|BOOLEAN|FILENAME)\b")
# Options whose value is one of a few words: their metavar lists them (a|b|c).
_CHOICE_OPTIONS = ("--format", "--optimize", "--engine", "--wait-for")


def _tree(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, command
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield from _tree(sub, (*path, name))


def _commands() -> list[tuple[tuple[str, ...], Any]]:
    return list(_tree(get_command(app)))


def _help(path: tuple[str, ...]) -> str:
    out = CliRunner().invoke(app, [*path, "--help"], terminal_width=200)
    assert out.exit_code == 0, (path, out.output)
    return out.output


def test_the_tree_holds_every_command_and_subcommand() -> None:
    paths = {" ".join(p) for p, _ in _commands()}
    assert {"plan", "show-gpus", "jobs launch", "jobs queue", "jobs cancel", "jobs logs",
            "autostop", "stop", "start", "ssh", "status", "catalog update"} <= paths


@pytest.mark.parametrize("path", [p for p, _ in _commands()], ids=lambda p: " ".join(p) or "-")
def test_help_shows_plain_metavars(path: tuple[str, ...]) -> None:
    text = _help(path)
    found = sorted({m.group(0) for m in _PYTHON_TYPE.finditer(text)}
                   | {m.group(0) for m in _PARAM_NAME.finditer(text)})
    assert not found, f"skyc {' '.join(path)} --help shows {found}:\n{text}"


@pytest.mark.parametrize("path", [p for p, _ in _commands()], ids=lambda p: " ".join(p) or "-")
def test_the_usage_line_writes_arguments_as_click_does(path: tuple[str, ...]) -> None:
    """``Usage: skyc logs [OPTIONS] CLUSTER [JOB_ID]``: a required argument bare, an
    optional one in brackets, never in braces (``{CLUSTER}``)."""
    usage = next(line for line in _help(path).splitlines() if "Usage:" in line)
    assert "{" not in usage and "}" not in usage, usage


def test_usage_lines_name_required_and_optional_arguments() -> None:
    usage = {p: next(line for line in _help(p).splitlines() if "Usage:" in line).strip()
             for p in (("logs",), ("plan",), ("queue",))}
    assert usage[("logs",)] == "Usage: skyc logs [OPTIONS] CLUSTER [JOB_ID]"
    assert usage[("plan",)] == "Usage: skyc plan [OPTIONS] TASK..."
    assert usage[("queue",)] == "Usage: skyc queue [OPTIONS] [CLUSTER]..."


def test_every_value_taking_parameter_names_its_metavar() -> None:
    """Structural: every argument and every option that takes a value declares a
    metavar, so no type name can creep into a new command's help."""
    missing = []
    for path, command in _commands():
        for param in getattr(command, "params", []):
            if getattr(param, "is_flag", False) or param.name in ("help", "version"):
                continue
            if getattr(param, "metavar", None) is None:
                missing.append(f"{' '.join(path)} {param.opts[0]}")
    assert not missing, missing


def test_choices_are_listed() -> None:
    seen = 0
    for path, command in _commands():
        for param in getattr(command, "params", []):
            if set(param.opts) & set(_CHOICE_OPTIONS):
                seen += 1
                assert "|" in (param.metavar or ""), f"{' '.join(path)} {param.opts[0]}"
    assert seen >= 8  # plan, validate, check, queue, status, jobs queue, autostop, ...


def test_jobs_launch_help_reads_plainly() -> None:
    text = _help(("jobs", "launch"))
    assert "TASK" in text and "KEY[=VAL]" in text and "NAME" in text
    assert "{task_file}" not in text and "<str>" not in text and "<list[str]>" not in text
