"""The ``skyc`` command line. The only place that prints.

Commands live in sibling modules named ``cmd_<area>.py``; each defines
``register(app)``. Command bodies import the heavy parts of skyc lazily so
that ``skyc --help`` and ``skyc validate`` start fast.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import sys
from typing import Any

import typer

from skyc import __version__
from skyc.errors import SkycError

app = typer.Typer(
    name="skyc",
    help=(
        "skyc compiles AI workloads (SkyPilot task YAML) into placement plans, "
        "reviewable infrastructure-as-code stacks and running jobs."
    ),
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain help text: "cloud[/region]" must not be read as markup
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"skyc {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """skyc: task YAML -> plan -> stacks -> running job."""


# The order `skyc --help` lists commands in: the pipeline's order, then the rest.
_ORDER = ("cmd_task", "cmd_plan", "cmd_gpus", "cmd_stacks", "cmd_apply", "cmd_jobs", "cmd_managed",
          "cmd_status")


def _plain_argument_help() -> None:
    """An argument with a metavar (TASK, CLUSTER) is shown in help as just that; typer
    releases that add the Python type after it (``CLUSTER <str>``) are told not to."""
    try:
        from typer.core import TyperArgument
    except ImportError:
        return
    shown = getattr(TyperArgument, "display_type_rich", None)
    if shown is None:
        return

    def display_type_rich(self: Any, ctx: Any) -> Any:
        return None if self.metavar is not None else shown(self, ctx)

    setattr(TyperArgument, "display_type_rich", display_type_rich)  # noqa: B010


def _register_commands() -> None:
    names = [m.name for m in pkgutil.iter_modules(__path__) if m.name.startswith("cmd_")]
    names.sort(key=lambda n: (_ORDER.index(n) if n in _ORDER else len(_ORDER), n))
    for name in names:
        importlib.import_module(f"{__name__}.{name}").register(app)


_plain_argument_help()
_register_commands()


def _command_name(info: Any) -> str:
    name = info.name or info.callback.__name__.replace("_", "-")
    return str(name)


def app_for(argv: list[str]) -> typer.Typer:
    """The app with only the command ``argv`` invokes: typer converts every registered
    command (its signature, its options) on each run, so a run that names one command
    converts just that one. The whole app for anything else (root help, completion, a
    misspelt command, which then gets click's suggestions)."""
    import copy

    first = next((a for a in argv if not a.startswith("-")), None)
    if first is None or any(k.startswith("_SKYC_COMPLETE") for k in os.environ):
        return app
    commands = [c for c in app.registered_commands if _command_name(c) == first]
    groups = [g for g in app.registered_groups if g.name == first]
    if not commands and not groups:
        return app
    pruned = copy.copy(app)
    pruned.registered_commands = commands
    pruned.registered_groups = groups
    return pruned


def main() -> None:
    """Console-script entry point: run the app, turn SkycErrors into clean messages."""
    from skyc.cli.output import print_error

    # pydantic looks for plugins by reading every installed distribution's entry
    # points the first time a model is validated; the CLI uses none.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "1")
    try:
        rc = app_for(sys.argv[1:])(standalone_mode=False)
        # Without standalone mode, click returns `typer.Exit(n)`'s code instead of exiting.
        sys.exit(rc if isinstance(rc, int) else 0)
    except SkycError as exc:
        print_error(exc)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        print_error(SkycError("interrupted"))
        sys.exit(130)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        print_error(SkycError("aborted"))
        sys.exit(1)
    except OSError as exc:
        # A path the user gave (or SKYC_HOME) cannot be read or written.
        where = f"{exc.filename}: " if exc.filename else ""
        print_error(SkycError(f"{where}{exc.strerror or exc}"))
        sys.exit(1)
    except Exception as exc:
        # Usage errors (unknown command, bad option) come from typer's click layer,
        # whose import path varies between typer versions: recognise them by shape.
        show = getattr(exc, "show", None)
        code = getattr(exc, "exit_code", None)
        if callable(show) and isinstance(code, int):
            show()
            sys.exit(code)
        raise
