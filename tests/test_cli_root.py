"""The CLI's root: version, help, and clean errors for usage mistakes."""

from __future__ import annotations

import subprocess
import sys

from skyc import __version__


def _skyc(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skyc", *args], capture_output=True, text=True, timeout=60
    )


def test_version() -> None:
    out = _skyc("--version")
    assert out.returncode == 0
    assert out.stdout.strip() == f"skyc {__version__}"


def test_help_lists_usage() -> None:
    out = _skyc("--help")
    assert out.returncode == 0
    assert "Usage" in out.stdout


def test_unknown_command_is_an_error_without_traceback() -> None:
    out = _skyc("no-such-command")
    assert out.returncode != 0
    assert "Traceback" not in out.stderr


def _commands() -> list[str]:
    from skyc.cli import app

    names = [c.name for c in app.registered_commands if c.name]
    names += [f"{g.name} {c.name}" for g in app.registered_groups if g.typer_instance
              for c in g.typer_instance.registered_commands if g.name and c.name]
    return sorted(names)


def test_every_command_has_help() -> None:
    commands = _commands()
    assert {"validate", "plan", "compile", "apply", "exec", "status", "destroy"} <= set(commands)
    for command in commands:
        out = _skyc(*command.split(), "--help")
        assert out.returncode == 0, (command, out.stderr[-2000:])
        assert "Usage" in out.stdout and "Traceback" not in out.stderr, command
