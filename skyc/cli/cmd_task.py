"""``skyc validate`` (``skyc schema`` is in :mod:`skyc.cli.cmd_schema`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from skyc.cli.output import print_line, print_problem

if TYPE_CHECKING:
    from skyc.errors import SpecProblem


def validate(
    files: list[Path] = typer.Argument(..., metavar="TASK", help="Task YAML files to check."),
    env: list[str] = typer.Option([], "--env", metavar="KEY[=VAL]",
                                  help="KEY=VAL (or KEY, from this environment)."),
    secret: list[str] = typer.Option(
        [], "--secret", metavar="KEY[=VAL]",
        help="KEY=VAL, or KEY to take the value from this environment."
    ),
    fmt: str = typer.Option("text", "--format", metavar="text|json",
                            help="text or json (the normalized tasks)."),
) -> None:
    """Check task files; print every problem. Exit 1 when any file is invalid."""
    from skyc.errors import ConfigError, TaskSpecError
    from skyc.task import load_tasks, parse_env_flags, parse_secret_flags

    if fmt not in ("text", "json"):
        raise ConfigError(f"--format {fmt}: expected 'text' or 'json'")
    envs = parse_env_flags(env)
    secrets = parse_secret_flags(secret)
    failed = False
    loaded: list[dict[str, Any]] = []
    for path in files:
        try:
            task_file = load_tasks(path, env=envs, secrets=secrets)
        except TaskSpecError as exc:
            failed = True
            for problem in exc.problems:
                print_problem("error", problem.render())
            if fmt == "json":
                loaded.append({"path": str(path), "valid": False,
                               "problems": [_problem(p) for p in exc.problems]})
            continue
        for warning in task_file.warnings:
            print_problem("warning", warning.render())
        if fmt == "json":
            loaded.append({
                "path": str(path), "valid": True,
                "problems": [_problem(w) for w in task_file.warnings],
                "header": task_file.header.dump() if task_file.header else None,
                "tasks": [t.dump() for t in task_file.tasks],
            })
        else:
            count = len(task_file.tasks)
            plural = "s" if count != 1 else ""
            print_line(f"{path}: valid ({count} task{plural})")
    if fmt == "json":
        typer.echo(json.dumps(loaded, indent=2, sort_keys=True))
    if failed:
        # SystemExit, not typer.Exit: the root runs click with standalone_mode=False,
        # which turns typer.Exit into a return value.
        raise SystemExit(1)


def _problem(problem: SpecProblem) -> dict[str, Any]:
    """One problem of ``validate --format json``: where (file, line, field path), what,
    the suggestion when there is one, and its severity (error or warning)."""
    return {"file": problem.file, "line": problem.line, "path": problem.path,
            "message": problem.message, "suggestion": problem.suggestion,
            "severity": problem.severity}


def register(app: typer.Typer) -> None:
    app.command("validate")(validate)
