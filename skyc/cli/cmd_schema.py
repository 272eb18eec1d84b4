"""``skyc schema [KIND]``: the JSON Schema of each document kind skyc reads or prints."""

from __future__ import annotations

import json

import typer


def schema_cmd(
    kind: str | None = typer.Argument(
        None, metavar="KIND",
        help="task, plan, status, queue, jobs or error (none: list the kinds)."),
) -> None:
    """Print the JSON Schema (draft 2020-12) of a document kind: task (a task file, for
    editors: yaml-language-server), or a --format json document skyc prints (plan,
    status, queue, jobs, error). Without KIND: the kinds and their format_version."""
    from skyc.schemas import KINDS, json_schema

    if kind is None:
        from skyc.cli.output import print_line

        width = max(len(k) for k in KINDS)
        for name, found in KINDS.items():
            print_line(f"{name:<{width}}  {found.version or '-':<4}  {found.printed_by}")
        return
    typer.echo(json.dumps(json_schema(kind), indent=2, sort_keys=True))


def register(app: typer.Typer) -> None:
    app.command("schema")(schema_cmd)
