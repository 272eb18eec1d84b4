"""The plan's JSON document (``skyc plan --format json``, ``skyc compile``'s plan.json)
and the review comment made of it (``--format markdown``)."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skyc.model.plan import Plan
    from skyc.optimizer.pipeline_cost import RunCost
    from skyc.settings.config import SkycConfig
    from skyc.task import Task


def _prices(p: dict[str, Any]) -> None:
    """Both units beside the total the Plan keeps: per node and for the whole cluster."""
    nodes = max(int(p.get("num_nodes") or 1), 1)
    p["hourly_cost_total"] = p["hourly_cost"]
    p["hourly_cost_per_node"] = round(float(p["hourly_cost"]) / nodes, 6)


def plan_document(plan: Plan, stacks: list[dict[str, Any]] | None = None,
                  notes: dict[str, Any] | None = None, run: RunCost | None = None
                  ) -> dict[str, Any]:
    """The JSON document of ``skyc plan --format json``.

    Every placement carries ``hourly_cost`` (USD/hour, all nodes; the Plan's own
    field), ``hourly_cost_total`` (the same) and ``hourly_cost_per_node``.
    ``stacks`` (one entry per cluster, from
    :func:`skyc.apply.stack_diffs.stack_entry`) and ``notes`` (the plan's scope:
    plan-only clouds, skipped ones, a cheaper disabled cloud, what apply would refuse)
    are added when given.
    ``run_cost`` (:class:`skyc.optimizer.pipeline_cost.RunCost`): per step its
    ``hours`` (None without a duration), ``duration_source`` ("task", or "time model"
    for a duration measured on other hardware, with ``duration_note``) and ``cost``;
    ``total_cost`` and ``total_hours`` only when every step has a duration
    (``missing_duration`` names the others); serial steps' hours add up, parallel
    tasks' take the longest; ``egress_cost`` is part of the total.

    ``hourly_cost`` and ``hourly_cost_total`` at the top are the plan's peak: what the
    tasks that run at the same time (``peak_tasks``, indices into ``tasks``) cost per
    hour together, so a pipeline's serial steps are never added up. ``objective`` is
    ``run`` when every task's duration was known and the whole run was minimised,
    ``hourly`` otherwise.
    """
    doc = plan.model_dump(mode="json")
    doc["tasks"] = [
        {"name": t["name"], "placement": t["placement"], "alternatives": t["alternatives"],
         "reason": t["reason"]}
        for t in doc["tasks"]
    ]
    for t in doc["tasks"]:
        for p in [t["placement"], *t["alternatives"]]:
            _prices(p)
    doc["hourly_cost_total"] = doc["hourly_cost"]
    if stacks is not None:
        doc["stacks"] = stacks
    if notes:
        doc["notes"] = notes
    if run is not None:
        doc["run_cost"] = run.model_dump(mode="json")
    return doc


def plan_json_version() -> str:
    """``skyc plan --format json``'s version (its history: :mod:`skyc.schemas.versions`)."""
    from skyc.schemas import versions

    return versions.PLAN


def compiled_plan_json(plan: Plan, stacks: list[dict[str, str]]) -> str:
    """``skyc compile``'s DIR/plan.json: the plan document of ``skyc plan --format json``
    (the same placements, priced in the same units and precision, the same
    format_version), its ``stacks`` the files compile wrote (``skyc schema plan``)."""
    import json

    doc = plan_document(plan, stacks)
    doc["format_version"] = plan_json_version()
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def add_review(doc: dict[str, Any], names: list[str], hours: float | None,
               policy: dict[str, Any] | None) -> dict[str, Any]:
    """``doc`` with its ``format_version``, ``cost`` (before, after and delta per
    cluster, with ``run_total`` for ``hours``) and the ``policy``'s verdict."""
    from skyc.review.report import cost_section

    doc["format_version"] = plan_json_version()
    doc["cost"] = cost_section(doc, names, hours)
    doc["policy"] = policy
    return doc


def review_markdown(
    doc: dict[str, Any], *, tasks: list[Task], plan: Plan, names: list[str],
    stacks: list[dict[str, Any]] | None, config: SkycConfig, engine: str | None,
    out: Path | None,
) -> str:
    """The review comment (``--format markdown``) of a document :func:`add_review`
    completed: each stack's files beside its diff, and the commands that apply it."""
    from skyc.compiler import choose_engine
    from skyc.review.markdown import render
    from skyc.review.planfile import stack_files

    files = {}
    for task, tp, cluster in zip(tasks, plan.tasks, names, strict=True):
        name = choose_engine(tp.placement.cloud, engine, config)
        files[cluster] = stack_files(cluster, tp.placement, task, config, name)
    steps = ([f"skyc apply {shlex.quote(str(out))}"] if out is not None
             else ["skyc plan TASK -o plan.skyc", "skyc apply plan.skyc"])
    return render(doc, stacks or [], doc["cost"], doc["policy"], files, steps)
