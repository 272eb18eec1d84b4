"""Third-party warnings stay out of user output (shown with --verbose); skyc's own are
printed (a real subprocess, as a user runs skyc)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_DRIVER = """
import sys, warnings
import skyc.cli as cli
def noisy():
    import json  # stands for a library: the warning's file is not skyc's
    warnings.warn_explicit("library says DSA is deprecated", DeprecationWarning,
                           json.__file__, 1)
    warnings.warn_explicit("skyc's own warning", UserWarning, cli.__file__, 1)
cli._quiet_library_warnings()
warnings.simplefilter("always")
noisy()
"""


def _run(**env: str) -> str:
    out = subprocess.run([sys.executable, "-c", _DRIVER], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT), **env}, timeout=60,
                         cwd=ROOT)
    assert out.returncode == 0, out.stderr
    return out.stderr


def test_library_warnings_are_hidden_unless_verbose() -> None:
    quiet = _run()
    assert "DSA is deprecated" not in quiet and "skyc's own warning" in quiet
    loud = _run(SKYC_VERBOSE="1")
    assert "DSA is deprecated" in loud and "skyc's own warning" in loud


def test_an_ssh_command_prints_no_asyncssh_deprecation(tmp_path: Path) -> None:
    """Importing asyncssh, as every command that opens SSH does, prints no
    CryptographyDeprecationWarning once the CLI's filter is in place."""
    code = ("import sys; sys.argv = ['skyc', '--help']; import skyc.cli as c; "
            "c._quiet_library_warnings(); import asyncssh")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert "Deprecat" not in out.stderr, out.stderr
