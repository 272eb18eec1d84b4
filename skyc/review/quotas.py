"""What is in use now, for quotas: every cluster the state knows that is not stopped
(a managed job's clusters are among them, recorded as it provisions them)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from skyc.review.policy import Usage

_IDLE = ("STOPPED", "FAILED")


def usage_from_state() -> Usage:
    """GPUs and $/hour per cluster in the state (the team's PostgreSQL database when
    one is configured, else ``$SKYC_HOME/state.db``; none when it is absent: reading
    never creates it)."""
    from skyc.review.policy import Usage

    return Usage(clusters=clusters_in_use())


def clusters_in_use() -> dict[str, tuple[float, float]]:
    """Cluster name -> (GPUs, $/hour total) of every cluster in the state that is not
    stopped (a plan's cost section reads this without the policy's models)."""
    from skyc.state.database import existing_state

    state = existing_state()
    if state is None:
        return {}
    with state as db:
        records = db.list_clusters()
    out: dict[str, tuple[float, float]] = {}
    for r in records:
        if r.status in _IDLE:
            continue
        acc = r.placement.get("accelerators") or {}
        nodes = int(r.placement.get("num_nodes") or 1)
        out[r.name] = (sum(float(v) for v in acc.values()) * nodes, r.hourly_cost)
    return out


def current_user(labels: dict[str, str], env: dict[str, str]) -> str | None:
    """The task's ``user`` label, else ``SKYC_USER``, else ``USER``."""
    return labels.get("user") or env.get("SKYC_USER") or env.get("USER") or None
