"""Where one ``skyc`` run's start-up goes, phase by phase, measured inside the process.

    python benchmarks/startup_phases.py plan task.yaml --no-diff --format json

Prints one JSON object of milliseconds (stdout keeps the command's own output out:
it goes to /dev/null): ``floor imports`` (``import typer, pydantic, yaml``, what the
bare run of bench_startup imports), ``pydantic models' machinery`` (the modules a first
model or TypeAdapter needs, which ``import pydantic`` leaves out and typer's parsing
loads in any run), ``skyc.cli`` (the CLI package), ``register``
(importing the command's module), ``command tree`` (typer turning the app into a
click command), ``parse`` (click's parsing and typer's conversion of each parameter,
which builds a pydantic TypeAdapter per parameter), ``command`` (the command's body),
``command imports`` (the part of it spent importing modules), ``models`` (pydantic
validators built, at import or on first use, anywhere in the run) and ``total``
(from the first import to the end; the interpreter's own start-up is not in it).
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

_clock = time.perf_counter


def _count_imports(acc: dict[str, float]) -> None:
    """Adds each top-level import's wall time to ``acc["imports"]`` (nested imports once)."""
    import importlib._bootstrap as bootstrap

    original = bootstrap._find_and_load  # type: ignore[attr-defined]
    depth = [0]

    def timed(name: str, import_: Any) -> Any:
        if name in sys.modules or depth[0]:
            return original(name, import_)
        start = _clock()
        depth[0] += 1
        try:
            return original(name, import_)
        finally:
            depth[0] -= 1
            acc["imports"] += _clock() - start

    bootstrap._find_and_load = timed  # type: ignore[attr-defined]


def _count_models(acc: dict[str, float]) -> None:
    """Adds the time pydantic spends building validators to ``acc["models"]``."""
    from pydantic._internal import _model_construction as construction

    original = construction.complete_model_class

    def timed(*args: Any, **kwargs: Any) -> Any:
        start = _clock()
        try:
            return original(*args, **kwargs)
        finally:
            acc["models"] += _clock() - start

    construction.complete_model_class = timed  # type: ignore[assignment]


def main(argv: list[str]) -> dict[str, float]:
    acc = {"imports": 0.0, "models": 0.0}
    t0 = _clock()
    import pydantic  # noqa: F401
    import typer
    import yaml  # noqa: F401

    t1 = _clock()
    _count_models(acc)  # imports pydantic's model machinery, which typer's parsing needs
    t1b = _clock()
    _count_imports(acc)
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "1")
    import skyc.cli as cli

    t2 = _clock()
    cli._no_plugin_search()
    cli._register_for(argv)
    t3 = _clock()
    app = cli.app_for(argv)
    body = {"wall": 0.0, "imports": 0.0}
    for info in app.registered_commands:
        info.callback = _timed_body(info.callback, body, acc)
    command = typer.main.get_command(app)
    t4 = _clock()
    stdout = sys.stdout
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115
    try:
        command.main(argv, standalone_mode=False)
    except SystemExit:
        pass
    finally:
        sys.stdout.close()
        sys.stdout = stdout
    t5 = _clock()
    return {
        "floor imports": t1 - t0, "pydantic models' machinery": t1b - t1,
        "skyc.cli": t2 - t1b, "register": t3 - t2,
        "command tree": t4 - t3, "parse": t5 - t4 - body["wall"], "command": body["wall"],
        "command imports": body["imports"], "models": acc["models"], "total": t5 - t0,
    }


def _timed_body(callback: Any, body: dict[str, float], acc: dict[str, float]) -> Any:
    import functools

    @functools.wraps(callback)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        start, before = _clock(), acc["imports"]
        try:
            return callback(*args, **kwargs)
        finally:
            body["wall"] = _clock() - start
            body["imports"] = acc["imports"] - before

    return wrapped


if __name__ == "__main__":
    phases = main(sys.argv[1:])
    print(json.dumps({k: round(v * 1000, 2) for k, v in phases.items()}))
