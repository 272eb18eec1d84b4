"""The policy that applies to a task file, as plan and apply use it: a constraint of
the optimizer, a verdict on a whole plan, and the gate before each apply attempt.

The review stage (policy files, their rules, quotas) comes after this one: it is
imported inside each function, and only once a policy file is found.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skyc.model.plan import Placement, Plan
    from skyc.settings.config import SkycConfig
    from skyc.task import Task

# ``--format json``'s ``policy``: ``file``, ``ok`` and ``violations``.
PolicyResult = dict[str, Any]


def policy_constraint(explicit: Path | None, task_file: Path, config: SkycConfig
                      ) -> Callable[[Placement], str | None] | None:
    """The policy that applies to ``task_file`` as a constraint of the optimizer (None
    when no policy applies): it places on what the policy allows."""
    from skyc.review.policy_file import find_policy

    path = find_policy(explicit, task_file, config.policy)
    if path is None:
        return None
    from skyc.review.policy import load_policy, placement_allowed

    return placement_allowed(load_policy(path))


def check_policy(
    explicit: Path | None, task_file: Path, tasks: list[Task], plan: Plan, names: list[str],
    config: SkycConfig,
) -> PolicyResult | None:
    """The policy's verdict on the plan (``--format json``'s ``policy``): its file and
    its violations; None when no policy applies."""
    import os

    from skyc.review.policy_file import find_policy

    path = find_policy(explicit, task_file, config.policy)
    if path is None:
        return None
    from skyc.review.policy import Planned, evaluate, load_policy
    from skyc.review.quotas import current_user, usage_from_state

    policy = load_policy(path)
    planned = [Planned(cluster=c, placement=tp.placement,
                       labels=t.candidates()[tp.placement.candidate_index].labels)
               for t, tp, c in zip(tasks, plan.tasks, names, strict=True)]
    labels = {k: v for p in planned for k, v in p.labels.items()}
    violations = evaluate(policy, planned, usage_from_state(),
                          current_user(labels, dict(os.environ)), at_once=plan.peak_tasks,
                          gpus_at_once=plan.peak_accelerator_tasks)
    return {"file": str(path), "ok": not violations,
            "violations": [v.model_dump(mode="json") for v in violations]}


def policy_gate(explicit: Path | None, task_file: Path, tasks: Sequence[Task], allow: bool
                ) -> Callable[[str, Placement], None] | None:
    """The policy check before each apply attempt (``LaunchOptions.admit``); None when
    no policy applies (or the file holds several tasks: apply refuses those)."""
    from skyc.review.admit import policy_gate as gate
    from skyc.review.policy import find_policy, load_policy
    from skyc.settings.config import load_config

    path = find_policy(explicit, task_file, load_config().policy)
    if path is None or len(tasks) != 1:
        return None
    return gate(load_policy(path), path, tasks[0], allow)
