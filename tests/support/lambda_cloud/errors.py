"""The extra target's one error: a region out of capacity."""

from __future__ import annotations

from collections.abc import Sequence

from skyc.errors import ProvisionError, ProvisionFailure
from skyc.model.diagnostics import Diagnostic
from skyc.model.plan import Placement


def classify(diagnostics: Sequence[Diagnostic], placement: Placement | None
             ) -> ProvisionError | None:
    for diag in diagnostics:
        if "InsufficientCapacity" in diag.text:
            failure = ProvisionFailure(
                code="InsufficientCapacity", scope="region", retryable=True, cloud="lambda",
                region=placement.region if placement else None, resource=diag.address,
                raw=diag.text)
            return ProvisionError("lambda: InsufficientCapacity", failure)
    return None
