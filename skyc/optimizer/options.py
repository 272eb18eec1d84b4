"""A task's options, worked out once per distinct request within one ``optimize`` call.

A pipeline repeats a few resource shapes over many steps. What a task may take
depends only on what its candidates ask (:func:`~skyc.optimizer.feasible.feasibility_key`)
and its node count, given what one call holds fixed (catalog, blocked placements,
infra, policy, target). So the feasible choices, the reservations' and the policy's
verdicts and the ranked per-location options are worked out once per distinct
request and shared by the tasks that make it; what names a task (the policy's report,
an error) is still said of each task.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import NamedTuple

from skyc.optimizer.blocked import Blocked
from skyc.optimizer.choice import Choice, Target
from skyc.optimizer.constraints import Allowed, admitted
from skyc.optimizer.explain import infeasible
from skyc.optimizer.feasible import Infra, feasibility_key, task_choices
from skyc.optimizer.ports import CatalogLike, TaskLike
from skyc.optimizer.rank import ranked_options
from skyc.optimizer.reserved import without_unreserved
from skyc.task.candidate import ResourceCandidate


class TaskOptions(NamedTuple):
    choices: list[Choice]       # every choice the task may take
    options: list[Choice]       # per (cloud, region) the best of its top preference, ranked
    policy_note: str | None     # the better offers the policy excluded
    notes: tuple[str, ...]      # what its reason adds: better offers left out, and why


def request_key(cands: Sequence[ResourceCandidate], num_nodes: int) -> Hashable:
    """Tasks with equal keys have equal options in one ``optimize`` call."""
    return num_nodes, tuple(feasibility_key(c) for c in cands)


class TaskOptionsMemo:
    """Each distinct request's options, worked out on first ask."""

    def __init__(self, catalog: CatalogLike, *, blocked: Sequence[Blocked], infra: Infra,
                 target: Target, allowed: Allowed | None) -> None:
        self.catalog, self.blocked, self.infra = catalog, list(blocked), infra
        self.target, self.allowed = target, allowed
        self._known: dict[Hashable, TaskOptions] = {}

    def of(self, name: str, task: TaskLike) -> TaskOptions:
        """``task``'s options; an error names ``name`` when it has none."""
        cands = list(task.candidates())
        key = request_key(cands, task.num_nodes)
        found = self._known.get(key)
        if found is None:
            found = self._known[key] = self.work_out(name, cands, task.num_nodes)
        return found

    def work_out(self, name: str, cands: Sequence[ResourceCandidate], num_nodes: int
                 ) -> TaskOptions:
        """The options of one request, with no memo."""
        catalog, target = self.catalog, self.target
        choices = task_choices(cands, num_nodes, catalog, blocked=self.blocked,
                               infra=self.infra)
        if not choices:
            raise infeasible(name, cands, num_nodes, catalog, self.blocked, self.infra)
        reserved = without_unreserved(choices, catalog, target)
        if not reserved.kept:
            raise infeasible(name, cands, num_nodes, catalog, self.blocked, self.infra,
                             known=reserved.why)
        choices, policy = reserved.kept, None
        if self.allowed is not None:
            choices, policy = admitted(name, choices, self.allowed, target)
        notes = tuple(n for n in (reserved.note, policy) if n)
        return TaskOptions(choices, ranked_options(choices, target), policy, notes)
