"""An attempt's admission: the policy gate's check (quotas count every cluster in the
state) and the record of the cluster the attempt is about to create, as one step for
everyone who shares the state. Between them nobody else's check runs, so two people
racing past a quota see each other: one is refused. The step holds a lock of the state
(in a team's PostgreSQL state, an advisory lock across every machine) for as long as the
check and the record take, never for the engine's run."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from skyc.state.locks import cluster_lock

if TYPE_CHECKING:
    from skyc.model.plan import Placement

# Not a cluster's name (those have no '.'), so no cluster's lock.
QUOTA_LOCK = "quota.admit"
QUOTA_LOCK_TIMEOUT_S = 120.0


def admit_and_record(admit: Callable[[str, Placement], None] | None, name: str,
                     placement: Placement, record: Callable[[], None],
                     on_wait: Callable[[str], None] | None = None) -> None:
    """``admit`` (raises when the policy refuses) then ``record``, under the state's
    admission lock; without a gate, ``record`` alone (nothing to serialise)."""
    if admit is None:
        record()
        return
    with cluster_lock(QUOTA_LOCK, timeout=QUOTA_LOCK_TIMEOUT_S, on_wait=on_wait):
        admit(name, placement)
        record()
