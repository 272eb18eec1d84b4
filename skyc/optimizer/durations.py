"""Tasks' durations in the optimizer: with every task's duration known, the plan
minimises what the whole run costs (``--optimize cost``: each task's ``$/hr total`` x
its hours on that offer, plus data transfer) or how long it takes (``--optimize
time``: its hours, plus transfer time), instead of the hourly price or the time
model's one-hour reference job.

A duration measured on other hardware (``measured_on``) is scaled to each offer by
the time model, so a faster, dearer accelerator can be the cheaper whole run. When a
task has no duration, or an offer's accelerator is one the time model cannot scale
to, every task is ranked as before (per hour, or by the time model).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from skyc.optimizer.choice import Choice, Target
from skyc.optimizer.pipeline_cost import StepDuration, step_hours


def task_duration(task: Any) -> StepDuration | None:
    """A task's ``duration`` (``_metadata.skyc.duration``) as a StepDuration; None when it
    has none (or is a task type without durations)."""
    d = getattr(task, "duration", None)
    if d is None:
        return None
    ref = d.reference
    return StepDuration(hours=d.hours, given_as=d.time,
                        measured_on=(ref.name or "", ref.count) if ref is not None else None)


def with_run_hours(names: Sequence[str], options: Sequence[Sequence[Choice]],
                   durations: Sequence[StepDuration | None]) -> list[list[Choice]] | None:
    """Each choice with its hours for the task's duration; None unless every task
    has a duration that scales to every one of its choices."""
    if not options or any(d is None for d in durations):
        return None
    out: list[list[Choice]] = []
    # Tasks that share their options (the same list) and duration share the row.
    rows: dict[tuple[int, StepDuration], list[Choice]] = {}
    for name, opts, d in zip(names, options, durations, strict=True):
        assert d is not None
        row = rows.get((id(opts), d))
        if row is None:
            row = []
            for c in opts:
                hours = step_hours(name, c.placement(), d)
                if hours is None:
                    return None
                row.append(c._replace(run_hours=hours))
            rows[(id(opts), d)] = row
        out.append(row)
    return out


def _what(c: Choice) -> str:
    acc = ", ".join(f"{k}:{v:g}" for k, v in sorted((c.accelerators or {}).items()))
    o = c.offer
    return " ".join(x for x in (o.instance_type, acc and f"({acc})", "in", o.infra) if x)


def run_reason(chosen: Choice, choices: Sequence[Choice], target: Target, joint: bool) -> str:
    """Why ``chosen`` won when the whole run was minimised; names the cheapest row per
    hour when that is another one, and what its run would cost."""
    from skyc.optimizer.pipeline_cost import hours_text

    hours = chosen.run_hours or 0.0
    cost = chosen.run_cost or 0.0
    if target == "cost":
        text = f"cheapest for the whole run: ${cost:,.2f} for {hours_text(hours)}"
    else:
        text = f"fastest for the whole run: {hours_text(hours)} for ${cost:,.2f}"
    text += f" (of {len(choices)} feasible offers)"
    by_hour = min(choices, key=lambda c: (c.hourly_cost, c.key("cost")))
    if by_hour.hourly_cost < chosen.hourly_cost - 1e-9 and by_hour.run_hours is not None:
        text += (f"; the cheapest per hour, {_what(by_hour)} at "
                 f"${by_hour.hourly_cost:.4f}/hr total, would take "
                 f"{hours_text(by_hour.run_hours)} and cost ${by_hour.run_cost or 0.0:,.2f}")
    if joint:
        best = min(c.objective(target) for c in choices)
        if chosen.objective(target) > best + 1e-9:
            what = "cheapest" if target == "cost" else "fastest"
            return (f"not the {what} for the whole run of {len(choices)} feasible offers "
                    f"(this one: ${cost:,.2f} for {hours_text(hours)}): placed jointly with "
                    "the pipeline's other tasks, to keep their data transfer low")
        else:
            text += "; placed jointly with the pipeline's data transfers"
    return text
