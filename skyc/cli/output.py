"""Shared console objects and error rendering for the CLI.

``console`` and ``err_console`` are rich Consoles created on first use: rich
costs tens of milliseconds to import, and commands that only print a line or
an error (``skyc validate``, ``skyc --help``'s error paths) never pay for it.
``print_error``, ``print_warning`` and ``print_line`` write plain text (with
ANSI colour only on a terminal, unless ``NO_COLOR`` is set) without rich.
Everything printed through them or the consoles has its control characters
escaped (:func:`safe`): a task's name or value cannot move the cursor or clear
the screen.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Sequence
from typing import IO, TYPE_CHECKING, Any, cast

from skyc.errors import SkycError

if TYPE_CHECKING:
    from rich.console import Console

UNWRAPPED_WIDTH = 4096
_STYLES = {"error": "1;31", "hint": "33", "warning": "33", "ok": "32"}


class _LazyConsole:
    """Stands in for a rich Console and creates it on the first attribute access."""

    def __init__(self, *, stderr: bool) -> None:
        self._stderr = stderr
        self._console: Console | None = None

    def _get(self) -> Console:
        if self._console is None:
            from rich.console import Console

            self._console = Console(stderr=self._stderr, highlight=False, emoji=False)
            if not self._console.is_terminal and not os.environ.get("COLUMNS"):
                # Pipes and CI logs: lines are never wrapped, tables keep every column.
                self._console.width = UNWRAPPED_WIDTH
            self._console.push_render_hook(escaping_hook())
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self._get(), name)


console = cast("Console", _LazyConsole(stderr=False))
err_console = cast("Console", _LazyConsole(stderr=True))


# C0 controls but newline and tab, DEL, C1 controls, and the bidirectional overrides
# (which reorder what a terminal shows): a task's name or value can hold any of them.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def safe(text: str) -> str:
    """``text`` with control characters and escape sequences shown, not obeyed:
    ESC becomes the four characters ``\\x1b``; newlines and tabs are kept."""
    if not _UNSAFE.search(text):
        return text
    return _UNSAFE.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                       else f"\\u{ord(m.group()):04x}", text)


def escaping_hook() -> Any:
    """A rich render hook that escapes control characters in everything printed
    through the shared consoles (tables, markup, plain text); rich's own styling
    is added after it and is kept."""
    from rich.console import RenderHook
    from rich.segment import Segment

    class _Escaped:
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        def __rich_console__(self, console: Any, options: Any) -> Any:
            for seg in console.render(self.inner, options):
                yield seg if seg.control else Segment(safe(seg.text), seg.style)

    class _Hook(RenderHook):
        def process_renderables(self, renderables: list[Any]) -> list[Any]:
            return [_Escaped(r) for r in renderables]

    return _Hook()


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
    stream.write(safe(message) + "\n")
    stream.flush()


def print_error(exc: SkycError) -> None:
    """Print an error the way every command does: message, then the hint."""
    stream = sys.stderr
    lines = [f"{_label('error', stream)} {safe(str(exc))}"]
    if exc.hint:
        lines.append(f"{_label('hint', stream)} {safe(exc.hint)}")
    stream.write("\n".join(lines) + "\n")
    stream.flush()


def print_warning(message: str) -> None:
    stream = sys.stderr
    stream.write(f"{_label('warning', stream)} {safe(message)}\n")
    stream.flush()


def print_problem(kind: str, message: str) -> None:
    """``error: ...`` or ``warning: ...`` for one problem of a file (stderr)."""
    stream = sys.stderr
    stream.write(f"{_label(kind, stream)} {safe(message)}\n")
    stream.flush()


def fitted_table(title: str | None, columns: Sequence[str], rows: Sequence[Sequence[str]], *,
                 right: Sequence[str] = (), drop: Sequence[str] = (),
                 width: int | None = None) -> Any:
    """A rich Table of ``rows`` that fits ``width`` (the console's): the columns in
    ``drop`` are left out, in that order, until the rest fits on one line per row;
    a cell that still does not fit folds onto the next line, and is never cut
    short (prices, instance types, infra)."""
    from rich import box
    from rich.measure import Measurement
    from rich.table import Table
    from rich.text import Text

    width = console.width if width is None else width

    def build(keep: list[int]) -> Any:
        table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 1),
                      pad_edge=False, collapse_padding=True)
        for i in keep:
            # As a last resort a cell folds onto a second line: never an ellipsis.
            table.add_column(columns[i], justify="right" if columns[i] in right else "left",
                             overflow="fold")
        for r in rows:
            table.add_row(*(Text(r[i]) for i in keep))  # Text: cells are never markup
        return table

    unbounded = console.options.update_width(UNWRAPPED_WIDTH)
    keep = list(range(len(columns)))
    table = build(keep)
    for name in drop:
        if Measurement.get(console, unbounded, table).maximum <= width:
            break
        if name in columns:
            keep.remove(columns.index(name))
            table = build(keep)
    return table


def print_table(table: Any) -> None:
    """Print a table on stdout (its width already fitted, see :func:`fitted_table`)."""
    console.print(table, soft_wrap=False, crop=False)


def print_text(text: str) -> None:
    """A line of prose on stdout (no markup): on a terminal, wrapped between words at
    its width; into a pipe or a file, one line whatever its length."""
    console.print(text, soft_wrap=not console.is_terminal, markup=False)


def json_errors(command: Callable[..., None], document: str = "plan") -> Callable[..., None]:
    """``command`` (a typer command taking ``fmt``), which on a SkycError with
    ``--format json`` also prints the error document on stdout (``format_version``,
    ``document``: the kind ``command`` prints when it succeeds, ``error``: ``type``,
    ``message``, ``hint``, ``exit_code``; see ``skyc schema error``) before the usual
    message on stderr and exit code."""
    import functools

    @functools.wraps(command)
    def wrapped(*args: Any, **kwargs: Any) -> None:
        from skyc.errors import SkycError

        try:
            command(*args, **kwargs)
        except SkycError as exc:
            if kwargs.get("fmt") == "json":
                import json

                import typer

                from skyc.schemas.error import error_document

                typer.echo(json.dumps(error_document(exc, document), indent=2,
                                      sort_keys=True))
            raise

    return wrapped


def names_text(names: Sequence[str], most: int = 5) -> str:
    """``a, b, c`` or, past ``most`` names, ``a, b, c, d, e and 7 more``."""
    shown = ", ".join(names[:most])
    return shown if len(names) <= most else f"{shown} and {len(names) - most} more"
