"""What a plan's tasks cost to run, not only per hour: each step's duration and cost,
and the total when every step's duration is known.

The steps of a pipeline run one after another, so their hourly prices are never
added up as if they ran at once: each step costs its ``$/hr total`` times its own
hours, the pipeline costs the sum of those plus the data moved between steps,
and takes the sum of their hours. Tasks that run at once (``execution: parallel``,
several task files) cost the same sum and take as long as the longest.

A duration is given per task (``_metadata.skyc.duration`` in the task file): as
is, for whatever placement is chosen, or measured on another accelerator and
scaled to the chosen one by the time model (``timemodel``: hours are inversely
proportional to relative throughput x count per node).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict

from skyc.errors import ConfigError
from skyc.model.plan import Placement, Plan
from skyc.optimizer.timemodel import (
    CPU_NODE_THROUGHPUT,
    RELATIVE_THROUGHPUT,
    TPU_CHIP_THROUGHPUT,
    accelerator_throughput,
)

Execution = Literal["serial", "parallel"]
DurationSource = Literal["task", "time model"]


class StepDuration(NamedTuple):
    """A task's duration as given: ``hours`` on the chosen placement, or on
    ``measured_on`` (accelerator name and count per node) when that is set."""

    hours: float
    measured_on: tuple[str, float] | None = None
    given_as: str = ""                          # as written: "10h", for the notes


class StepCost(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    num_nodes: int
    hourly_cost_per_node: float
    hourly_cost_total: float
    hours: float | None = None                  # None: no duration given
    duration_source: DurationSource | None = None
    duration_note: str | None = None            # how an estimate was made
    cost: float | None = None                   # hourly_cost_total x hours


class RunCost(BaseModel):
    """``run_cost`` in ``skyc plan --format json``."""

    model_config = ConfigDict(extra="forbid")

    execution: Execution
    steps: list[StepCost]
    egress_cost: float                          # USD, data moved between steps
    total_cost: float | None = None             # None unless every step has a duration
    total_hours: float | None = None
    missing_duration: list[str]                 # steps without one (no total then)


def hours_text(hours: float) -> str:
    """``0.5`` -> ``30 min``; ``3.14`` -> ``3.1 h``; ``120`` -> ``120 h``."""
    if hours < 1:
        return f"{max(hours * 60, 1):.0f} min"
    return f"{hours:.1f} h" if hours < 100 else f"{hours:,.0f} h"


def _known(name: str) -> str | None:
    """The time model's own spelling of an accelerator (case-insensitive), if it has one."""
    lowered = {k.lower(): k for k in RELATIVE_THROUGHPUT}
    if name.lower() in lowered:
        return lowered[name.lower()]
    gen = name.lower().removeprefix("tpu-").split("-")[0]
    return name if name.lower().startswith("tpu-") and gen in TPU_CHIP_THROUGHPUT else None


def _node_throughput(p: Placement) -> tuple[float, str] | None:
    """Throughput of one node of ``p`` and its accelerator as text; None when the model
    does not know the accelerator."""
    if not p.accelerators:
        return CPU_NODE_THROUGHPUT, "CPU only"
    name, count = sorted(p.accelerators.items())[0]
    known = _known(name)
    if known is None:
        return None
    return accelerator_throughput(known, count), f"{name}:{count:g}"


def check_reference(task: str, measured_on: tuple[str, float]) -> None:
    """Refuse a ``measured_on`` accelerator the time model cannot scale from."""
    if _known(measured_on[0]) is None:
        raise ConfigError(
            f"task '{task}': _metadata.skyc.duration.measured_on: the time model knows no "
            f"accelerator '{measured_on[0]}'",
            hint="give the duration on the chosen placement (duration: 6h), or measure it on "
                 f"one of {', '.join(sorted(RELATIVE_THROUGHPUT, key=str.lower))}")


def _step_hours(task: str, p: Placement, d: StepDuration
                ) -> tuple[float | None, DurationSource | None, str | None]:
    if d.measured_on is None:
        return d.hours, "task", None
    ref_name, ref_count = d.measured_on
    check_reference(task, d.measured_on)
    chosen = _node_throughput(p)
    if chosen is None:
        name = sorted((p.accelerators or {"?": 0}).items())[0][0]
        return None, None, f"the time model cannot scale {d.given_as} on {ref_name}:" \
            f"{ref_count:g} to {name}"
    per_node, what = chosen
    ref = accelerator_throughput(_known(ref_name) or ref_name, ref_count)
    if what.lower() == f"{ref_name}:{ref_count:g}".lower():
        return d.hours, "task", None
    hours = d.hours * ref / per_node
    note = (f"{d.given_as} on {ref_name}:{ref_count:g} in the task, scaled to {what} by the "
            f"time model (throughput per node {ref:.3g} -> {per_node:.3g}, H100 = 1)")
    return hours, "time model", note


def step_hours(task: str, p: Placement, d: StepDuration) -> float | None:
    """The task's hours on ``p`` (scaled by the time model when measured on other
    hardware); None when the model cannot scale to ``p``'s accelerator."""
    return _step_hours(task, p, d)[0]


def run_cost(plan: Plan, durations: Sequence[StepDuration | None],
             execution: Execution = "serial") -> RunCost:
    """Each step's cost for its duration, and the plan's total when all are known."""
    if len(durations) != len(plan.tasks):
        raise ValueError(f"{len(durations)} durations for {len(plan.tasks)} tasks")
    steps: list[StepCost] = []
    for tp, d in zip(plan.tasks, durations, strict=True):
        p = tp.placement
        step = StepCost(name=tp.name, num_nodes=p.num_nodes,
                        hourly_cost_per_node=round(p.hourly_cost / max(p.num_nodes, 1), 6),
                        hourly_cost_total=p.hourly_cost)
        if d is not None:
            hours, source, note = _step_hours(tp.name, p, d)
            step = step.model_copy(update={
                "hours": None if hours is None else round(hours, 6), "duration_source": source,
                "duration_note": note,
                "cost": None if hours is None else round(p.hourly_cost * hours, 6)})
        steps.append(step)
    missing = [s.name for s in steps if s.hours is None]
    total_cost = total_hours = None
    if not missing:
        each = [s.hours or 0.0 for s in steps]
        total_hours = round(sum(each) if execution == "serial" else max(each), 6)
        total_cost = round(sum(s.cost or 0.0 for s in steps) + plan.egress_cost, 6)
    return RunCost(execution=execution, steps=steps, egress_cost=plan.egress_cost,
                   total_cost=total_cost, total_hours=total_hours, missing_duration=missing)


def comparable_cost(plan: Plan, durations: Sequence[StepDuration | None],
                    execution: Execution = "serial") -> tuple[float, Literal["run", "hour"]]:
    """What two plans of the same tasks compare by: the whole run's cost when every
    task has a duration (``run``), else each task for one hour plus the data moved
    (``hour``, the optimizer's own measure then). Never the peak alone."""
    rc = run_cost(plan, durations, execution)
    if rc.total_cost is not None:
        return rc.total_cost, "run"
    return sum(tp.placement.hourly_cost for tp in plan.tasks) + plan.egress_cost, "hour"
