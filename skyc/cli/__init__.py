"""The ``skyc`` command line. The only place that prints.

Commands live in sibling modules named ``cmd_<area>.py``; each defines
``register(app)``. Command bodies import the heavy parts of skyc lazily so
that ``skyc --help`` and ``skyc validate`` start fast.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import re
import sys
from pathlib import Path
from typing import Any

import typer

from skyc import __version__
from skyc.errors import SkycError

_app = typer.Typer(
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


@_app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
    verbose: bool = typer.Option(
        False, "--verbose", help="Also show the warnings of the libraries skyc uses (for "
        "example asyncssh's about DSA keys); SKYC_VERBOSE=1 does the same."),
) -> None:
    """skyc: task YAML -> plan -> stacks -> running job."""
    if verbose:
        os.environ["SKYC_VERBOSE"] = "1"


def _quiet_library_warnings() -> None:
    """Warnings raised by third-party code (a library's deprecation notice, two lines of
    its source) are not the user's business: shown only with --verbose / SKYC_VERBOSE=1.
    skyc's own warnings are printed as skyc prints everything else."""
    import warnings

    shown = warnings.showwarning
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: Any = None, line: str | None = None) -> None:
        if os.path.abspath(filename).startswith(package) or os.environ.get("SKYC_VERBOSE"):
            shown(message, category, filename, lineno, file, line)

    warnings.showwarning = show


# The order `skyc --help` lists commands in: the pipeline's order, then the rest.
_ORDER = ("cmd_task", "cmd_plan", "cmd_gpus", "cmd_stacks", "cmd_apply", "cmd_jobs", "cmd_managed",
          "cmd_status")


def _plain_argument_help() -> None:
    """An argument with a metavar (TASK, CLUSTER) is shown in help as just that; typer
    releases that add the Python type after it (``CLUSTER <str>``) or brace it on the
    usage line (``{TASK}``) are told not to."""
    try:
        from typer.core import TyperArgument
    except ImportError:
        return
    if hasattr(TyperArgument, "_usage_display_name"):
        setattr(TyperArgument, "_usage_display_name", _usage_name)  # noqa: B010
    shown = getattr(TyperArgument, "display_type_rich", None)
    if shown is None:
        return

    def display_type_rich(self: Any, ctx: Any) -> Any:
        return None if self.metavar is not None else shown(self, ctx)

    setattr(TyperArgument, "display_type_rich", display_type_rich)  # noqa: B010


def _usage_name(self: Any) -> str:
    """An argument on the usage line as click and SkyPilot write it: ``TASK`` when it is
    required, ``[JOB_ID]`` when not, ``...`` after one that takes several (typer
    releases that write a required one as ``{TASK}`` are told not to)."""
    name = str(self.metavar if self.metavar is not None else self.name)
    if not self.required:
        name = f"[{name}]"
    return name + ("..." if self.nargs != 1 else "")


def _no_converter_for_absent_values() -> None:
    """typer releases that convert values through pydantic build a TypeAdapter for every
    parameter of the command run, the ones not given on the command line too (whose
    value is None), and import the adapters' module for them.
    An absent value needs no converter, so the parameter's value is settled as typer
    settles it (None, or () for a list) without one; so are the values of the plainest
    parameters (:func:`_plain_value`). Every other value goes through typer as before."""
    try:
        from typer._click.exceptions import MissingParameter
        from typer.core import _TyperParameter
    except ImportError:
        return
    converts = getattr(_TyperParameter, "process_value", None)
    if converts is None or not hasattr(_TyperParameter, "get_runtime_param"):
        return

    def process_value(self: Any, ctx: Any, value: Any) -> Any:
        if value is not None:
            plain = _plain_value(self, ctx, value)
            if plain is _TYPER:
                return converts(self, ctx, value)
            value = plain
        elif self.multiple or self.nargs == -1:
            value = ()
        if self.required and self.value_is_missing(value):
            raise MissingParameter(ctx=ctx, param=self)
        if self.callback is not None:
            value = self.callback(ctx, self, value)
        return value

    setattr(_TyperParameter, "process_value", process_value)  # noqa: B010


_TYPER = object()  # "let typer convert it"


def _plain_value(param: Any, ctx: Any, value: Any) -> Any:
    """``value`` as typer's converter makes it, for a parameter of type ``str``, ``Path``
    or a list of either with no parser of its own: a str stays as it is, a list of them
    becomes a list, a path becomes a ``Path`` checked by typer's own path rules
    (``exists``, ``dir_okay``, ...). ``_TYPER`` for anything else, which typer converts
    (and refuses with its own message)."""
    from typing import get_args, get_origin

    desc = getattr(param, "type_descriptor", None)
    info = getattr(desc, "parameter_info", None)
    if desc is None or info is None or getattr(info, "parser", True) is not None \
            or getattr(desc, "file_annotation", True) is not None:
        return _TYPER
    kind = desc.annotation
    if param.multiple or param.nargs != 1:
        if get_origin(kind) is not list or not isinstance(value, (list, tuple)):
            return _TYPER
        [kind] = get_args(kind) or [None]
        items = [_plain_item(param, ctx, info, kind, item) for item in value]
        return _TYPER if any(item is _TYPER for item in items) else items
    return _plain_item(param, ctx, info, kind, value)


def _plain_item(param: Any, ctx: Any, info: Any, kind: Any, value: Any) -> Any:
    if not isinstance(value, str):
        return _TYPER
    if kind is str:
        return value
    if kind is Path and getattr(info, "path_type", True) is None \
            and not getattr(info, "allow_dash", True) and value and "\0" not in value:
        try:
            from typer._param_types import coerce_cli_path
        except ImportError:
            return _TYPER
        # checked as the text given (typer's messages quote it), then made a Path
        checked = coerce_cli_path(value, info, path_type=None, param=param, ctx=ctx)
        return Path(os.fsdecode(checked))
    return _TYPER


_registered: set[str] = set()
# ``app.command("plan")``, ``@app.command("status")``, ``app.add_typer(x, name="jobs")``
# in a command module's register(): the names it registers, read without importing it.
_REGISTERS = re.compile(r'(?<![\w.])app\.(?:command\(\s*|add_typer\([^)]*?name=)"([\w-]+)"')


def _modules() -> list[str]:
    names = [m.name for m in pkgutil.iter_modules(__path__) if m.name.startswith("cmd_")]
    return sorted(names, key=lambda n: (_ORDER.index(n) if n in _ORDER else len(_ORDER), n))


def _register(modules: list[str]) -> None:
    for name in modules:
        if name not in _registered:
            _registered.add(name)
            importlib.import_module(f"{__name__}.{name}").register(_app)


def _register_commands() -> None:
    """Every command (``skyc --help``, completion, tests that walk the app)."""
    _register(_modules())


# The module that registers each command, so that a run finds its module without
# reading every module's source (tests check this against what the modules register).
# A command missing here still runs: its module is then found by reading the sources.
COMMAND_MODULES = {
    "validate": "cmd_task", "schema": "cmd_schema",
    "plan": "cmd_plan", "check": "cmd_plan", "catalog": "cmd_plan",
    "show-gpus": "cmd_gpus",
    "compile": "cmd_stacks", "destroy": "cmd_stacks", "down": "cmd_stacks",
    "apply": "cmd_apply", "launch": "cmd_apply",
    "exec": "cmd_jobs", "queue": "cmd_jobs", "logs": "cmd_jobs", "cancel": "cmd_jobs",
    "jobs": "cmd_managed", "serve": "cmd_serve",
    "status": "cmd_status", "state": "cmd_state",
    "autostop": "cmd_lifecycle", "stop": "cmd_lifecycle", "start": "cmd_lifecycle",
    "ssh": "cmd_ssh", "ssh-config": "cmd_ssh", "storage": "cmd_storage",
    "volumes": "cmd_volumes",
}


def _register_for(argv: list[str]) -> None:
    """Only the module of the command ``argv`` names (a run imports and converts one
    command's module, not all of them): from :data:`COMMAND_MODULES`, else when its
    source says which one it is; every module otherwise (root help, completion, an
    unknown or misspelt command)."""
    first = next((a for a in argv if not a.startswith("-")), None)
    if first is not None and not any(k.startswith("_SKYC_COMPLETE") for k in os.environ):
        if first in COMMAND_MODULES:
            _register([COMMAND_MODULES[first]])
            if first in _registered_names():
                return
        for name in _modules():
            try:
                source = (Path(__path__[0]) / f"{name}.py").read_text(encoding="utf-8")
            except OSError:
                break
            if first in _REGISTERS.findall(source):
                _register([name])
                return
    _register_commands()


_plain_argument_help()
_no_converter_for_absent_values()


def _command_name(info: Any) -> str:
    name = info.name or info.callback.__name__.replace("_", "-")
    return str(name)


def _registered_names() -> set[str]:
    """The commands and command groups registered so far."""
    return ({_command_name(c) for c in _app.registered_commands}
            | {str(g.name) for g in _app.registered_groups})


def app_for(argv: list[str]) -> typer.Typer:
    """The app with only the command ``argv`` invokes: typer converts every registered
    command (its signature, its options) on each run, so a run that names one command
    converts just that one. The whole app for anything else (root help, completion, a
    misspelt command, which then gets click's suggestions)."""
    import copy

    first = next((a for a in argv if not a.startswith("-")), None)
    if first is None or any(k.startswith("_SKYC_COMPLETE") for k in os.environ):
        return _app
    commands = [c for c in _app.registered_commands if _command_name(c) == first]
    groups = [g for g in _app.registered_groups if g.name == first]
    if not commands and not groups:
        return _app
    pruned = copy.copy(_app)
    pruned.registered_commands = commands
    pruned.registered_groups = groups
    return pruned


def _no_plugin_search() -> None:
    """With plugins disabled, pydantic still imports its plugin loader the first time
    it builds a validator, and that module imports ``importlib.metadata`` (and through
    it the email package) at every command's start, for nothing. The CLI,
    which disables plugins, gives pydantic a loader that finds none instead."""
    name = "pydantic.plugin._loader"
    if os.environ.get("PYDANTIC_DISABLE_PLUGINS") not in ("1", "true", "__all__") or (
            name in sys.modules):
        return
    import types

    loader = types.ModuleType(name, "No pydantic plugins: the skyc CLI disables them.")

    def real(attr: str) -> Any:
        """Anything but ``get_plugins`` (a pydantic that asks for more): the real loader.
        Not module attributes such as ``__path__``, which the import system probes."""
        if attr.startswith("__"):
            raise AttributeError(attr)
        sys.modules.pop(name, None)
        return getattr(importlib.import_module(name), attr)

    setattr(loader, "get_plugins", tuple)  # noqa: B010  (an empty iterable of plugins)
    setattr(loader, "__getattr__", real)  # noqa: B010
    sys.modules[name] = loader


def main() -> None:
    """Console-script entry point: run the app, turn SkycErrors into clean messages.

    Everything the command and the engines it runs create is private to this user
    ($SKYC_HOME 0700, its state, engine state, saved plans and logs 0600)."""
    from skyc.settings.home import use_private_umask

    use_private_umask()
    _quiet_library_warnings()
    code = _run()
    _before_exit()
    sys.exit(code)


def _before_exit() -> None:
    """The process ends next. Its last garbage collections would walk every object the
    imports made (pydantic's schemas, typer's and rich's classes), a large part of a
    short command's run, to free memory the OS takes back anyway: the objects alive now
    are left out of them. Objects are still freed as their references go, files and
    databases still closed, ``atexit`` and ``weakref.finalize`` hooks still run."""
    import gc

    gc.collect(0)  # the newest objects: what the command left in reference cycles
    gc.freeze()


def _run() -> int:
    """The command ``sys.argv`` names; its exit code."""
    from skyc.cli.output import print_error

    # pydantic looks for plugins by reading every installed distribution's entry
    # points the first time a model is validated; the CLI uses none.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "1")
    _no_plugin_search()
    try:
        _register_for(sys.argv[1:])
        rc = app_for(sys.argv[1:])(standalone_mode=False)
        # Without standalone mode, click returns `typer.Exit(n)`'s code instead of exiting.
        return rc if isinstance(rc, int) else 0
    except SkycError as exc:
        print_error(exc)
        return exc.exit_code
    except KeyboardInterrupt:
        print_error(SkycError("interrupted"))
        return 130
    except typer.Exit as exc:
        return int(exc.exit_code)
    except typer.Abort:
        print_error(SkycError("aborted"))
        return 1
    except OSError as exc:
        print_error(_os_error(exc))
        return 1
    except SystemExit as exc:
        # A command that exits itself (sys.exit(n) deep in a command body).
        code = exc.code
        if code is None or isinstance(code, int):
            return code or 0
        print(code, file=sys.stderr)
        return 1
    except Exception as exc:
        # Usage errors (unknown command, bad option) come from typer's click layer,
        # whose import path varies between typer versions: recognise them by shape.
        show = getattr(exc, "show", None)
        code = getattr(exc, "exit_code", None)
        if callable(show) and isinstance(code, int):
            show()
            return code
        raise


def _os_error(exc: OSError) -> SkycError:
    """A path the user gave (or SKYC_HOME) cannot be read or written: the error names
    it (SKYC_HOME when the system did not say which path, as a full disk's may not)."""
    import errno

    from skyc.settings.home import skyc_home

    home = skyc_home()
    where = exc.filename or (home if exc.errno in (
        errno.ENOSPC, errno.EROFS, errno.EDQUOT) else None)
    hint = {errno.ENOSPC: "free space on that filesystem, then run the command again",
            errno.EDQUOT: "free space within your quota, then run the command again",
            }.get(exc.errno or 0)
    if exc.errno == errno.EROFS and str(where).startswith(str(home)):
        hint = ("run this command with a writable SKYC_HOME; plan, status, queue and logs "
                "work on a read-only one")
    prefix = f"{where}: " if where else ""
    return SkycError(f"{prefix}{exc.strerror or exc}", hint=hint)


def __getattr__(name: str) -> Any:
    """``skyc.cli.app``: the whole app, every command registered (for callers that walk
    it); ``main`` registers only what a run needs."""
    if name == "app":
        _register_commands()
        return _app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
