"""Each engine's error boundary: where the exceptions of what an engine drives (the
terraform binary, the Pulumi Automation API) become an :class:`~skyc.errors.EngineError`
that names the stack and what failed.

An engine holds its :class:`ErrorTable` (``ERRORS`` in :mod:`skyc.stacks.terraform`;
``ERRORS`` and ``UPDATE_ERRORS`` in :mod:`skyc.stacks.pulumi_engine`): each row maps a
lower-layer exception type to the error it becomes, and the engine calls its lower
layer only inside the table's :meth:`ErrorTable.boundary`. An exception whose type the
table does not name (a ``ValueError`` of skyc's own code) passes through as it is: the
boundary swallows nothing it was not told about. What an engine that ran prints when it
fails (terraform's diagnostics, its exit code) is read by the engine, not here.

Rows are keyed by the name a library exports a class under
(``pulumi.automation.CommandError``, ``subprocess.TimeoutExpired``), looked up in the
modules already loaded: a table imports no library, and a library that was never
imported raised nothing. The most specific class of an exception that the table names
picks its row.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from skyc.errors import ApplyFailed, EngineError
from skyc.model.diagnostics import Diagnostic
from skyc.model.exception_rows import loaded_class, row_for


class Rule(NamedTuple):
    """What one lower-layer exception type becomes: ``error`` with the message ``says``,
    a template of the boundary's fields (``op``, ``stack``, ...), ``exc`` (the
    exception), ``reason`` (its last line) and ``first`` (the first error the engine
    reported, else the reason). An :class:`~skyc.errors.ApplyFailed` carries the
    boundary's diagnostics and log file."""

    error: type[EngineError]
    says: str
    hint: str | None = None



def reason(exc: BaseException) -> str:
    """The last line of what ``exc`` says (a CLI's error comes last), or its type."""
    lines = [line for line in str(exc).strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else type(exc).__name__


class ErrorTable:
    """One engine's mapping table: lower-layer exception type -> EngineError."""

    def __init__(self, engine: str, rules: Mapping[str, Rule]) -> None:
        self.engine = engine
        self.rules = dict(rules)

    def with_rules(self, rules: Mapping[str, Rule]) -> ErrorTable:
        """This table with ``rules`` added or replacing its own."""
        return ErrorTable(self.engine, {**self.rules, **rules})

    def rule_for(self, exc: BaseException) -> Rule | None:
        """The row of the most specific class of ``exc`` the table names; None for none."""
        return row_for(self.rules, exc)

    def error_for(self, exc: BaseException, *, diagnostics: Sequence[Diagnostic] = (),
                  log_file: Path | None = None, **where: object) -> EngineError | None:
        """The EngineError ``exc`` becomes; None when the table does not name its type."""
        rule = self.rule_for(exc)
        if rule is None:
            return None
        said = reason(exc)
        first = diagnostics[0].summary if diagnostics else said
        message = rule.says.format(exc=exc, reason=said, first=first, **where)
        if issubclass(rule.error, ApplyFailed):
            return rule.error(message, list(diagnostics), log_file=log_file)
        return rule.error(message, hint=rule.hint)

    @contextlib.contextmanager
    def boundary(self, *, diagnostics: Sequence[Diagnostic] = (),
                 log_file: Path | None = None, **where: object) -> Iterator[None]:
        """Inside, an exception the table names is raised as its EngineError (the
        original as its ``__cause__``); any other passes through unchanged.
        ``diagnostics`` may fill while the body runs: the error carries those there
        are when it fails."""
        try:
            yield
        except Exception as exc:
            error = self.error_for(exc, diagnostics=diagnostics, log_file=log_file, **where)
            if error is None:
                raise
            raise error from exc


__all__ = ["ErrorTable", "Rule", "loaded_class", "reason"]
