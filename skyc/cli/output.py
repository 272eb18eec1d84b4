"""Shared console objects and error rendering for the CLI."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from skyc.errors import SkycError

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)


def print_error(exc: SkycError) -> None:
    """Print an error the way every command does: message, then the hint."""
    err_console.print(f"[bold red]error:[/] {escape(str(exc))}")
    if exc.hint:
        err_console.print(f"[yellow]hint:[/] {escape(exc.hint)}")


def print_warning(message: str) -> None:
    err_console.print(f"[yellow]warning:[/] {escape(message)}")
