"""How an error boundary's table finds the row of an exception (the engines' tables in
:mod:`skyc.stacks.engine_errors`, the transports' in :mod:`skyc.runtime.transport_errors`).

Rows are keyed by the name a library exports a class under
(``pulumi.automation.CommandError``, ``builtins.OSError``), looked up in the modules
already loaded: a table imports no library, and a library that was never imported
raised nothing. The most specific class of an exception that the table names picks
its row.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import TypeVar

Row = TypeVar("Row")


def loaded_class(name: str) -> type | None:
    """The class a loaded module exports as ``name`` (``module.Class``), or None."""
    module, _, attr = name.rpartition(".")
    found = getattr(sys.modules.get(module), attr, None)
    return found if isinstance(found, type) else None


def row_for(rows: Mapping[str, Row], exc: BaseException) -> Row | None:
    """The row of the most specific class of ``exc`` that ``rows`` names; None for none."""
    classes: dict[type, Row] = {}
    for name, row in rows.items():
        cls = loaded_class(name)
        if cls is not None:
            classes.setdefault(cls, row)
    return next((classes[c] for c in type(exc).__mro__ if c in classes), None)
