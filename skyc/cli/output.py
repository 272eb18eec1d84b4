"""Shared console objects and error rendering for the CLI.

``console`` and ``err_console`` are rich Consoles created on first use: rich
costs tens of milliseconds to import, and commands that only print a line or
an error (``skyc validate``, ``skyc --help``'s error paths) never pay for it.
``print_error``, ``print_warning`` and ``print_line`` write plain text (with
ANSI colour only on a terminal, unless ``NO_COLOR`` is set) without rich.
"""

from __future__ import annotations

import os
import sys
from typing import IO, TYPE_CHECKING, Any, cast

from skyc.errors import SkycError

if TYPE_CHECKING:
    from rich.console import Console

_STYLES = {"error": "1;31", "hint": "33", "warning": "33", "ok": "32"}


class _LazyConsole:
    """Stands in for a rich Console and creates it on the first attribute access."""

    def __init__(self, *, stderr: bool) -> None:
        self._stderr = stderr
        self._console: Console | None = None

    def _get(self) -> Console:
        if self._console is None:
            from rich.console import Console

            self._console = Console(stderr=self._stderr, highlight=False)
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self._get(), name)


console = cast("Console", _LazyConsole(stderr=False))
err_console = cast("Console", _LazyConsole(stderr=True))


def _colour(stream: IO[str]) -> bool:
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def _label(name: str, stream: IO[str], text: str | None = None) -> str:
    text = text or f"{name}:"
    return f"\x1b[{_STYLES[name]}m{text}\x1b[0m" if _colour(stream) else text


def print_line(message: str, *, err: bool = False) -> None:
    """One plain line (no markup is interpreted) on stdout, or stderr with ``err``."""
    stream = sys.stderr if err else sys.stdout
    stream.write(message + "\n")
    stream.flush()


def print_error(exc: SkycError) -> None:
    """Print an error the way every command does: message, then the hint."""
    stream = sys.stderr
    lines = [f"{_label('error', stream)} {exc}"]
    if exc.hint:
        lines.append(f"{_label('hint', stream)} {exc.hint}")
    stream.write("\n".join(lines) + "\n")
    stream.flush()


def print_warning(message: str) -> None:
    stream = sys.stderr
    stream.write(f"{_label('warning', stream)} {message}\n")
    stream.flush()


def print_problem(kind: str, message: str) -> None:
    """``error: ...`` or ``warning: ...`` for one problem of a file (stderr)."""
    stream = sys.stderr
    stream.write(f"{_label(kind, stream)} {message}\n")
    stream.flush()
