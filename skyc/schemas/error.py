"""The error document: what a ``--format json`` command prints on stdout when it
fails, in place of its own document (the message and hint also go to stderr)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from skyc.schemas import versions
from skyc.schemas.base import Document

if TYPE_CHECKING:
    from skyc.errors import SkycError

DocumentKind = Literal["plan", "status", "queue", "jobs"]


class ErrorDetail(Document):
    type: str = Field(description="the kind of error, e.g. ConfigError")
    message: str
    hint: str | None = Field(description="what to do about it")
    exit_code: int = Field(description="the command's exit code")


class ErrorDocument(Document):
    format_version: versions.ErrorVersion
    document: DocumentKind = Field(
        description="the kind of document the command prints when it succeeds")
    error: ErrorDetail


def error_document(exc: SkycError, document: str) -> dict[str, Any]:
    """The error document of ``exc`` for a command that prints ``document``."""
    return {"format_version": versions.ERROR, "document": document, "error": {
        "type": type(exc).__name__, "message": str(exc), "hint": exc.hint,
        "exit_code": exc.exit_code}}


TITLE = (f"skyc error document (a failed --format json command), format_version "
         f"{versions.ERROR}")
