"""The optimizer: tasks + catalog offers -> a Plan. It knows no cloud names.

``--optimize cost`` minimizes the hourly price x num_nodes (spot price per zone
when ``use_spot``); ``--optimize time`` minimizes estimated hours (see
``timemodel``: relative accelerator throughput x count x nodes), cost breaking
ties. When every task has a duration (``_metadata.skyc.duration``), the whole run
is minimized instead: each offer's hourly price x the task's hours on it (scaled
by the time model when measured on other hardware), or those hours for ``time``
(``durations``). A plan's ``hourly_cost`` is its peak: the dearest set of tasks
that run at the same time (``concurrency``), never serial steps added up.
Ordered resources: a lower preference wins over a cheaper higher one.
Pipelines add data transfer between placements (``skyc.catalog.egress``):
chains by dynamic programming (``chain``), general DAGs by an integer program
(``dag``). Ties break on ``Choice.key``: (preference, objective, other
objective, cloud, region, zone, instance type, candidate index).
On-demand offers a cloud grants only from a reservation are left out unless the
config names one (``reserved``); tasks that ask for the same resources share
their options within one call (``options``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from skyc.lazy import lazy_exports

if TYPE_CHECKING:
    from skyc.model.plan import CatalogSource, Placement, Plan, TaskPlan
    from skyc.optimizer.blocked import Blocked, parse_infra
    from skyc.optimizer.chain import solve_chain
    from skyc.optimizer.choice import Choice, Target
    from skyc.optimizer.core import best_choice, optimize, place, task_choices
    from skyc.optimizer.dag import solve_dag
    from skyc.optimizer.feasible import candidate_choices
    from skyc.optimizer.rank import alternatives

# Each name's module, imported on first use: a module that needs only the plan's
# models (in ``skyc.model.plan``) or ``blocked`` does not load the solvers, the task
# package and the catalog with them.
_EXPORTS = {
    "Blocked": "blocked", "parse_infra": "blocked", "solve_chain": "chain",
    "Choice": "choice", "Target": "choice", "best_choice": "core", "optimize": "core",
    "place": "core", "task_choices": "core", "solve_dag": "dag",
    "candidate_choices": "feasible", "CatalogSource": "skyc.model.plan",
    "Placement": "skyc.model.plan", "Plan": "skyc.model.plan",
    "TaskPlan": "skyc.model.plan", "alternatives": "rank",
}


__getattr__ = lazy_exports(__name__, _EXPORTS)


__all__ = [
    "Blocked",
    "CatalogSource",
    "Choice",
    "Placement",
    "Plan",
    "Target",
    "TaskPlan",
    "alternatives",
    "best_choice",
    "candidate_choices",
    "optimize",
    "parse_infra",
    "place",
    "solve_chain",
    "solve_dag",
    "task_choices",
]
