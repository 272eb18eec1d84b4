"""The neutral diagnostic: one error (or warning) an engine reported for a stack.

Each engine maps its own error output to these (terraform's ``-json``
``diagnostic`` lines, Pulumi's engine events and error text), and each target
classifies them into a ProvisionError. A classifier reads ``text`` and, where
it needs to know which resource failed, ``address``: never the engine's raw
output format.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict


class Diagnostic(BaseModel):
    """One engine diagnostic.

    ``address`` is the failing resource as the engine names it (terraform's
    ``aws_instance.node_0``, Pulumi's URN or resource name), when known;
    ``summary`` is the one-line message and ``detail`` the rest, both as the
    engine printed them (cloud error codes such as ``InsufficientInstanceCapacity``
    or ``ZONE_RESOURCE_POOL_EXHAUSTED`` appear in one or the other).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    engine: str
    summary: str
    detail: str = ""
    address: str | None = None
    severity: Literal["error", "warning"] = "error"

    @property
    def text(self) -> str:
        """Summary and detail together, as a classifier searches them."""
        return f"{self.summary}\n{self.detail}".strip()
