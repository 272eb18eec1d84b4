"""The driver: tasks + catalog (+ blocked, target, infra, edges) -> Plan."""

from __future__ import annotations

from collections.abc import Sequence

from skyc.errors import ConfigError, InfeasibleError
from skyc.optimizer.blocked import Blocked, parse_infra
from skyc.optimizer.chain import Weight, solve_chain
from skyc.optimizer.choice import Choice, Target
from skyc.optimizer.concurrency import peak_tasks
from skyc.optimizer.constraints import Allowed, Report, admitted
from skyc.optimizer.dag import solve_dag
from skyc.optimizer.durations import run_reason, task_duration, with_run_hours
from skyc.optimizer.explain import infeasible
from skyc.optimizer.feasible import candidate_choices
from skyc.optimizer.pipeline_cost import StepDuration
from skyc.optimizer.plan import Plan, TaskPlan
from skyc.optimizer.ports import CatalogLike, TaskLike
from skyc.optimizer.rank import alternatives, best_per_location, top_preference
from skyc.task.candidate import ResourceCandidate

Infra = tuple[str | None, str | None, str | None]


def task_choices(cands: Sequence[ResourceCandidate], num_nodes: int, catalog: CatalogLike, *,
                 blocked: Sequence[Blocked] = (), infra: Infra = (None, None, None)
                 ) -> list[Choice]:
    """Every feasible choice over all of a task's candidates."""
    out: list[Choice] = []
    for cand in cands:
        try:
            out.extend(candidate_choices(cand, num_nodes, catalog, blocked=blocked, infra=infra))
        except InfeasibleError:
            continue  # e.g. an unknown accelerator name: explained if nothing is feasible
    return out


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
        picks = [min(o, key=lambda c: c.key(target)) for o in options]
        return picks, sum(c.objective(target) for c in picks)
    if _is_chain(len(options), edges):
        return solve_chain(options, gb, target, weight)
    return solve_dag(options, moving, gb, target, weight)


def optimize(tasks: Sequence[TaskLike], catalog: CatalogLike, *,
             blocked: Sequence[Blocked] = (), target: Target = "cost",
             infra: str | None = None, edges: Sequence[tuple[int, int]] | None = None,
             durations: Sequence[StepDuration | None] | None = None,
             allowed: Allowed | None = None, report: Report | None = None) -> Plan:
    """Place every task. ``edges`` None = a chain in list order. ``durations`` None =
    each task's own ``duration`` (``_metadata.skyc.duration``), if it has one; with
    every task's known, the whole run is minimised (see ``durations``). ``allowed``: a
    constraint on placements (a policy, see :mod:`skyc.optimizer.constraints`);
    ``report(task, note)`` hears which better offers it excluded."""
    if target not in ("cost", "time"):
        raise ConfigError(f"--optimize must be cost or time, not '{target}'")
    where = parse_infra(infra)
    n = len(tasks)
    edge_list = [(i, i + 1) for i in range(n - 1)] if edges is None else list(edges)
    _check_edges(n, edge_list)
    names = [t.name or f"task-{i}" for i, t in enumerate(tasks)]
    all_choices: list[list[Choice]] = []
    options: list[list[Choice]] = []
    notes: list[str | None] = [None] * n
    for i, task in enumerate(tasks):
        cands = list(task.candidates())
        choices = task_choices(cands, task.num_nodes, catalog, blocked=blocked, infra=where)
        if not choices:
            raise infeasible(names[i], cands, task.num_nodes, catalog, blocked, where)
        if allowed is not None:
            choices, notes[i] = admitted(names[i], choices, allowed, target, report)
        all_choices.append(choices)
        top = top_preference(choices)
        options.append(sorted(best_per_location(top, target).values(),
                              key=lambda c: c.key(target)))
    gb = [float(sum((t.outputs or {}).values())) for t in tasks]
    weight = _weight(catalog, target)
    given = [task_duration(t) for t in tasks] if durations is None else list(durations)
    if len(given) != n:
        raise ValueError(f"{len(given)} durations for {n} tasks")
    timed = with_run_hours(names, all_choices, given)
    if timed is not None:  # the whole run, not one hour of it
        all_choices = timed
        options = [sorted(best_per_location(top_preference(c), target).values(),
                          key=lambda c: c.key(target)) for c in timed]
    picks, _ = place(options, edge_list, gb, target, weight)
    egress = sum(catalog.egress_cost(picks[u].offer, picks[v].offer, gb[u]) for u, v in edge_list)
    plans = []
    for i, chosen in enumerate(picks):
        alts = alternatives(all_choices[i], chosen, target)
        plans.append(TaskPlan(
            name=names[i], placement=chosen.placement(),
            alternatives=[c.placement() for c in alts],
            reason=_reason(chosen, all_choices[i], target, n > 1 and any(gb))
            + (f"; {notes[i]}" if notes[i] else ""),
        ))
    peak = peak_tasks([c.hourly_cost for c in picks], edge_list)
    held = peak_tasks([t.placement.total_accelerators for t in plans], edge_list)
    return Plan(
        tasks=plans, hourly_cost=round(sum(picks[i].hourly_cost for i in peak), 6),
        peak_tasks=peak, peak_accelerator_tasks=held, optimize=target, catalog=catalog.source,
        egress_cost=round(egress, 6), objective="run" if timed is not None else "hourly",
    )


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
