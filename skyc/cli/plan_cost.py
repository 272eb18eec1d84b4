"""The run cost in ``skyc plan``: each step's duration and cost, and the pipeline's total
(see :mod:`skyc.optimizer.pipeline_cost`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from skyc.model.plan import Plan
    from skyc.optimizer.pipeline_cost import RunCost

_COLUMNS = ("step", "infra", "instance", "nodes", "$/hr/node", "$/hr total", "duration",
            "from", "cost")
_RIGHT = ("nodes", "$/hr/node", "$/hr total", "duration", "cost")
# Dropped first when the terminal is too narrow: each step's own table has them.
_DROP = ("nodes", "instance", "infra")
GIVE_ONE = "give one under _metadata.skyc.duration in the task file, e.g. duration: 2h"


def _rows(rc: RunCost, plan: Plan) -> list[tuple[str, ...]]:
    from skyc.optimizer.pipeline_cost import hours_text

    rows: list[tuple[str, ...]] = []
    for step, tp in zip(rc.steps, plan.tasks, strict=True):
        p = tp.placement
        rows.append((
            step.name, p.short_infra, p.instance_type or "-", str(step.num_nodes),
            f"{step.hourly_cost_per_node:.4f}", f"{step.hourly_cost_total:.4f}",
            hours_text(step.hours) if step.hours is not None else "-",
            step.duration_source or "-",
            f"${step.cost:,.2f}" if step.cost is not None else "-",
        ))
    return rows


def total_line(rc: RunCost) -> str:
    """``total: $X for about N h``, or which steps have no duration (and no total)."""
    from skyc.cli.output import names_text
    from skyc.optimizer.pipeline_cost import hours_text

    if rc.total_cost is None or rc.total_hours is None:
        what = "step" if len(rc.steps) > 1 else "task"
        return (f"no total: no duration for {what} {names_text(rc.missing_duration, 8)} "
                f"({GIVE_ONE})")
    egress = f", with ${rc.egress_cost:,.2f} of data transfer" if rc.egress_cost else ""
    how = ""
    if len(rc.steps) > 1:
        how = (" (the steps one after another)" if rc.execution == "serial"
               else " (the tasks at once: as long as the longest)")
    return f"total: ${rc.total_cost:,.2f} for about {hours_text(rc.total_hours)}{egress}{how}"


def print_run_cost(rc: RunCost, plan: Plan) -> None:
    """A table of the steps (pipelines), then how each estimate was made."""
    from skyc.cli.output import fitted_table, print_table, print_text

    if len(rc.steps) > 1:
        title = ("pipeline: each step for its duration" if rc.execution == "serial"
                 else "tasks, run at once: each for its duration")
        print_table(fitted_table(title, _COLUMNS, _rows(rc, plan), right=_RIGHT, drop=_DROP))
    for step in rc.steps:
        if step.duration_note:
            print_text(f"  {step.name}: {step.duration_note}")
