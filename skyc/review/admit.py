"""The policy gate of ``skyc apply``: every placement an attempt is about to use (the
first and each failover re-target) is checked against the policy; a violation stops
the apply unless the user allowed it, which is then recorded in the cluster's events."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from skyc.errors import PolicyViolation
from skyc.review.policy import Planned, Policy, evaluate
from skyc.review.quotas import current_user, usage_from_state

if TYPE_CHECKING:
    from skyc.model.plan import Placement
    from skyc.task import Task


Gate = Callable[[str, "Placement"], None]


def policy_gate(policy: Policy, path: Path, task: Task, allow: bool) -> Gate:
    """A check for ``LaunchOptions.admit``: raises :class:`PolicyViolation`, or with
    ``allow`` records the violations as a ``policy`` event and lets the attempt go."""

    def admit(cluster: str, placement: Placement) -> None:
        labels = task.candidates()[placement.candidate_index].labels
        found = evaluate(policy, [Planned(cluster, placement, labels)], usage_from_state(),
                         current_user(labels, dict(os.environ)))
        if not found:
            return
        lines = [f"{v.rule}: {v.message}" for v in found]
        if not allow:
            raise PolicyViolation(
                f"policy {path}: {placement.infra} for cluster {cluster} is refused: "
                + "; ".join(lines),
                hint="change the task or the policy, or pass --allow-policy-violations "
                "(recorded in the cluster's events)")
        from skyc.state.database import StateDB

        with StateDB() as db:
            db.add_event(cluster, "policy", "applied despite policy violations: "
                         + "; ".join(lines),
                         {"policy": str(path), "infra": placement.infra,
                          "violations": [v.model_dump(mode="json") for v in found]})

    return admit
