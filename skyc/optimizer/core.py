"""The driver: tasks + catalog (+ blocked, target, infra, edges) -> Plan."""

from __future__ import annotations

from collections.abc import Sequence

from skyc.errors import ConfigError
from skyc.model.plan import Placement, Plan, TaskPlan
from skyc.optimizer.blocked import Blocked, parse_infra
from skyc.optimizer.chain import Weight, solve_chain
from skyc.optimizer.choice import Choice, Target
from skyc.optimizer.concurrency import peak_tasks
from skyc.optimizer.constraints import Allowed, Report
from skyc.optimizer.dag import solve_dag
from skyc.optimizer.data import DataSource, data_note, with_data
from skyc.optimizer.durations import run_reason, task_duration, with_run_hours
from skyc.optimizer.feasible import task_choices
from skyc.optimizer.options import TaskOptionsMemo
from skyc.optimizer.pipeline_cost import StepDuration
from skyc.optimizer.ports import CatalogLike, TaskLike
from skyc.optimizer.rank import alternatives, ranked_options, top_preference

__all__ = ["best_choice", "optimize", "place", "task_choices"]


def best_choice(choices: Sequence[Choice], target: Target = "cost") -> Choice:
    return min(top_preference(choices), key=lambda c: c.key(target))


def _weight(catalog: CatalogLike, target: Target) -> Weight:
    if target == "cost":
        return lambda a, b, gb: catalog.egress_cost(a.offer, b.offer, gb)
    return lambda a, b, gb: catalog.egress_seconds(a.offer, b.offer, gb) / 3600.0


def _is_chain(n: int, edges: Sequence[tuple[int, int]]) -> bool:
    return sorted(edges) == [(i, i + 1) for i in range(n - 1)]


def _check_edges(n: int, edges: Sequence[tuple[int, int]]) -> None:
    for u, v in edges:
        if not (0 <= u < n and 0 <= v < n) or u == v:
            raise ConfigError(f"edge ({u}, {v}) does not join two of the {n} tasks")
    indeg = [0] * n
    out: dict[int, list[int]] = {}
    for u, v in edges:
        indeg[v] += 1
        out.setdefault(u, []).append(v)
    ready = [i for i in range(n) if indeg[i] == 0]
    seen = 0
    while ready:
        u = ready.pop()
        seen += 1
        for v in out.get(u, []):
            indeg[v] -= 1
            if indeg[v] == 0:
                ready.append(v)
    if seen != n:
        raise ConfigError("the task graph has a cycle")


def place(options: Sequence[Sequence[Choice]], edges: Sequence[tuple[int, int]],
          gb: Sequence[float], target: Target, weight: Weight) -> tuple[list[Choice], float]:
    """Jointly optimal choices (one per task) given per-task options."""
    moving = [(u, v) for u, v in edges if gb[u] > 0]
    if not moving:
        best: dict[int, Choice] = {}  # by identity: tasks may share one options list
        for o in options:
            if id(o) not in best:
                best[id(o)] = min(o, key=lambda c: c.key(target))
        picks = [best[id(o)] for o in options]
        return picks, sum(c.objective(target) for c in picks)
    if _is_chain(len(options), edges):
        return solve_chain(options, gb, target, weight)
    return solve_dag(options, moving, gb, target, weight)


def optimize(tasks: Sequence[TaskLike], catalog: CatalogLike, *,
             blocked: Sequence[Blocked] = (), target: Target = "cost",
             infra: str | None = None, edges: Sequence[tuple[int, int]] | None = None,
             durations: Sequence[StepDuration | None] | None = None,
             allowed: Allowed | None = None, report: Report | None = None,
             data: Sequence[Sequence[DataSource]] | None = None) -> Plan:
    """Place every task. ``edges`` None = a chain in list order. ``durations`` None =
    each task's own ``duration`` (``_metadata.skyc.duration``), if it has one; with
    every task's known, the whole run is minimised (see ``durations``). ``allowed``: a
    constraint on placements (a policy, see :mod:`skyc.optimizer.constraints`);
    ``report(task, note)`` hears which better offers it excluded. Tasks that ask for
    the same resources share their options (``options``). ``data``: per task, the
    buckets it reads (see :mod:`skyc.optimizer.data`): reading them from elsewhere
    costs egress, counted in its objective."""
    if target not in ("cost", "time"):
        raise ConfigError(f"--optimize must be cost or time, not '{target}'")
    memo = TaskOptionsMemo(catalog, blocked=blocked, infra=parse_infra(infra), target=target,
                           allowed=allowed)
    n = len(tasks)
    edge_list = [(i, i + 1) for i in range(n - 1)] if edges is None else list(edges)
    _check_edges(n, edge_list)
    names = [t.name or f"task-{i}" for i, t in enumerate(tasks)]
    found = [memo.of(names[i], task) for i, task in enumerate(tasks)]
    for name, opts in zip(names, found, strict=True):
        if report is not None and opts.policy_note is not None:
            report(name, opts.policy_note)
    all_choices = [opts.choices for opts in found]
    options = [opts.options for opts in found]
    gb = [float(sum((t.outputs or {}).values())) for t in tasks]
    given = [task_duration(t) for t in tasks] if durations is None else list(durations)
    if len(given) != n:
        raise ValueError(f"{len(given)} durations for {n} tasks")
    timed = with_run_hours(names, all_choices, given)
    if timed is not None:  # the whole run, not one hour of it
        all_choices = timed
        ranked: dict[int, list[Choice]] = {}  # by identity: tasks may share a row
        for row in timed:
            if id(row) not in ranked:
                ranked[id(row)] = ranked_options(row, target)
        options = [ranked[id(row)] for row in timed]
    _read_data(data or [], all_choices, options, target)
    picks, _ = place(options, edge_list, gb, target, _weight(catalog, target))
    notes = [(*opts.notes, *([data_note(picks[i], all_choices[i], data[i])]
                             if data and data[i] else [])) for i, opts in enumerate(found)]
    egress = sum(catalog.egress_cost(picks[u].offer, picks[v].offer, gb[u]) for u, v in edge_list)
    egress += sum(c.data_cost for c in picks)  # reading the tasks' buckets
    explain = _Explained(target, joint=n > 1 and any(gb))
    plans = [explain.task_plan(names[i], chosen, all_choices[i], notes[i])
             for i, chosen in enumerate(picks)]
    peak = peak_tasks([c.hourly_cost for c in picks], edge_list)
    held = peak_tasks([t.placement.total_accelerators for t in plans], edge_list)
    return Plan(
        tasks=plans, hourly_cost=round(sum(picks[i].hourly_cost for i in peak), 6),
        peak_tasks=peak, peak_accelerator_tasks=held, optimize=target, catalog=catalog.source,
        egress_cost=round(egress, 6), objective="run" if timed is not None else "hourly",
    )


def _read_data(data: Sequence[Sequence[DataSource]], all_choices: list[list[Choice]],
               options: list[list[Choice]], target: Target) -> None:
    """Each task's choices with the egress of reading its data there (in place)."""
    for i, sources in enumerate(data):
        if sources:
            all_choices[i] = with_data(all_choices[i], sources)
            options[i] = ranked_options(all_choices[i], target)


class _Explained:
    """Each task's placement, alternatives and reason; worked out once per chosen
    choice among the same choices (tasks that share options mostly share these)."""

    def __init__(self, target: Target, *, joint: bool) -> None:
        self.target, self.joint = target, joint
        self._placements: dict[int, Placement] = {}
        self._known: dict[tuple[int, int, tuple[str, ...]],
                          tuple[Placement, list[Placement], str]] = {}

    def placement(self, c: Choice) -> Placement:
        found = self._placements.get(id(c))
        if found is None:
            found = self._placements[id(c)] = c.placement()
        return found

    def task_plan(self, name: str, chosen: Choice, choices: list[Choice],
                  notes: tuple[str, ...]) -> TaskPlan:
        # By identity: the lists and choices stay alive for the whole call.
        key = (id(choices), id(chosen), notes)
        found = self._known.get(key)
        if found is None:
            alts = alternatives(choices, chosen, self.target)
            why = "; ".join([_reason(chosen, choices, self.target, self.joint), *notes])
            found = self._known[key] = (self.placement(chosen),
                                        [self.placement(c) for c in alts], why)
        placement, alts_placed, why = found
        return TaskPlan(name=name, placement=placement, alternatives=list(alts_placed),
                        reason=why)


def _reason(chosen: Choice, choices: Sequence[Choice], target: Target, joint: bool) -> str:
    if chosen.run_hours is not None:
        return run_reason(chosen, top_preference(choices), target, joint)
    what = "cheapest" if target == "cost" else "fastest"
    levels = sorted({c.preference for c in choices})
    text = f"{what} of {len(choices)} feasible offers"
    if len(levels) > 1:
        text = f"{what} offer of the preferred candidate (ordered; {len(choices)} feasible in all)"
    if joint:
        best = min(c.objective(target) for c in top_preference(choices))
        if chosen.objective(target) > best + 1e-9:
            text = (f"not the {what} of {len(choices)} feasible offers: placed jointly with "
                    "the pipeline's other tasks, to keep their data transfer low")
        else:
            text += ", placed jointly with the pipeline's data transfers"
    return text
