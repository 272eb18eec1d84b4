"""Each transport's error boundary: where the exceptions of the library that reaches a
node become a :class:`~skyc.errors.TransportError` that names the node and what failed.

A transport holds one :class:`ErrorTable` (``LOCAL`` in :mod:`skyc.runtime.transport`,
``SSH`` in :mod:`skyc.runtime.ssh`, ``KUBE`` in :mod:`skyc.runtime.kube`): each row maps
a lower-layer exception type to the error it becomes, and the transport calls its
library only inside the table's :meth:`ErrorTable.boundary`. An exception whose type
the table does not name (a ``ValueError`` of skyc's own code) passes through as it is:
the boundary swallows nothing it was not told about.

Rows are keyed by the name a library exports a class under (``asyncssh.PermissionDenied``,
``builtins.OSError``), looked up in the modules already loaded: a table imports no
library, and a library that was never imported raised nothing. The most specific class
of an exception that the table names picks its row.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import Literal, NamedTuple

from skyc.errors import SkycError
from skyc.model.exception_rows import loaded_class, row_for

Retry = Literal["no", "yes", "grace"]


class Rule(NamedTuple):
    """What one lower-layer exception type becomes.

    ``says`` is the message, a template of the boundary's fields (``node``, ``doing``,
    ...), ``exc`` (the exception) and ``reason`` (it in a few words). ``retry`` is read
    while a node is connected to: ``yes`` when a node that is not up yet fails so
    (refused, timed out, no route), ``grace`` when a booting node may fail so for a
    moment (its key is taken a little after its sshd starts), ``no`` otherwise.
    """

    error: type[SkycError]
    says: str
    hint: str | None = None
    retry: Retry = "no"



Field = object  # a boundary's field: a value, or a function called only on a failure


class ErrorTable:
    """One transport's mapping table: lower-layer exception type -> SkycError."""

    def __init__(self, layer: str, rules: Mapping[str, Rule],
                 reason: Callable[[BaseException], str] = str) -> None:
        self.layer = layer
        self.rules = dict(rules)
        self._reason = reason

    def rule_for(self, exc: BaseException) -> Rule | None:
        """The row of the most specific class of ``exc`` the table names; None for none."""
        return row_for(self.rules, exc)

    def error(self, rule: Rule, exc: BaseException, **where: Field) -> SkycError:
        """The SkycError ``exc`` becomes by ``rule`` at a boundary with these fields. A
        field that is a function is called here; a ``hint`` field is the error's hint
        where the row gives none."""
        fields = {k: v() if callable(v) else v for k, v in where.items()}
        message = rule.says.format(exc=exc, reason=self._reason(exc), **fields)
        hint = rule.hint or fields.get("hint")
        return rule.error(message, hint=str(hint) if hint else None)

    def error_for(self, exc: BaseException, **where: Field) -> SkycError | None:
        """The SkycError ``exc`` becomes; None when the table does not name its type."""
        rule = self.rule_for(exc)
        return None if rule is None else self.error(rule, exc, **where)

    @contextlib.contextmanager
    def boundary(self, **where: Field) -> Iterator[None]:
        """Inside, an exception the table names is raised as its SkycError (the
        original as its ``__cause__``); any other passes through unchanged."""
        try:
            yield
        except Exception as exc:
            error = self.error_for(exc, **where)
            if error is None:
                raise
            raise error from exc

__all__ = ["ErrorTable", "Retry", "Rule", "loaded_class"]
