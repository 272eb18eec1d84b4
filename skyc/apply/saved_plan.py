"""Apply a saved plan: ``skyc apply FILE`` as a library function.

:func:`apply_saved_plan` applies exactly the plan a ``skyc plan -o FILE`` (or
:func:`skyc.apply.plan_diff.plan_with_diff` with ``out``) saved: its placements, in
its order, and only the changes its engine diff listed. A plan file whose inputs
moved since (a task file, the config, the catalog, a stack, a cluster's state) is
refused before anything is applied (:mod:`skyc.apply.saved_apply`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skyc.apply.failover import Attempt
    from skyc.apply.launch import LaunchOptions, LaunchReporter, LaunchResult
    from skyc.model.plan import Placement, Plan


class _Quiet:
    """A LaunchReporter that says nothing."""

    def stage(self, name: str, detail: str = "") -> None:
        """Nothing is said."""

    def plan(self, plan: Plan) -> None:
        """Nothing is said."""

    def attempt(self, attempt: Attempt, next_placement: Placement | None) -> None:
        """Nothing is said."""

    def engine_event(self, event: Any) -> None:
        """Nothing is said."""

    def log_line(self, node: str, line: str) -> None:
        """Nothing is said."""


def apply_saved_plan(
    path: str | Path, *, secrets: Mapping[str, str | None] | None = None,
    options: LaunchOptions | None = None, policy_file: Path | None = None,
    allow_policy_violations: bool = False, ask: Callable[[str], bool] | None = None,
    reporter: LaunchReporter | None = None,
) -> LaunchResult:
    """Apply the plan file at ``path`` as it was reviewed, without asking again, and run
    its task.

    ``secrets``: the values of the task's secrets (the plan file holds none; None for a
    name: from the environment). ``options``: how to launch (``down``, ``detach``,
    ``failover``...); the plan's own cluster, infra, catalog, optimize and engine
    replace theirs. The policy that applies (``policy_file``, else the task's
    directory's or the config's) is checked before each attempt, as ``skyc apply``
    does. ``ask(question)``, when every placement the plan lists failed, says whether
    failover may go on outside them (None: the apply stops). ``reporter`` hears the
    stages, attempts and the job's log (None: nothing is said).

    Raises :class:`skyc.errors.StalePlan` (nothing applied) when an input moved since
    the plan, and a :class:`skyc.errors.ConfigError` for a file that is not a plan
    file or was changed by hand.
    """
    from skyc.apply.launch import LaunchOptions, launch
    from skyc.apply.plan_policy import policy_gate
    from skyc.apply.saved_apply import launch_options, load_tasks_of
    from skyc.review.planfile import read
    from skyc.settings.config import load_config

    path = Path(path)
    saved = read(path)
    tasks = load_tasks_of(saved, dict(secrets or {}))
    base = options if options is not None else LaunchOptions()
    opts = launch_options(path, saved, tasks, load_config(), base)
    opts.admit = policy_gate(policy_file, Path(saved.tasks[0].file), tasks,
                             allow_policy_violations) or opts.admit
    if opts.reviewed is not None:
        opts.reviewed.ask = ask
    return launch(tasks, opts, reporter if reporter is not None else _Quiet())
