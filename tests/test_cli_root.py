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
