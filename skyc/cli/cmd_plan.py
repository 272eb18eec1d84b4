"""``skyc plan``, ``skyc check`` and ``skyc catalog update``.

The plan's per-cluster stack diffs are in :mod:`skyc.cli.plan_stacks`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import typer

from skyc.cli import plan_options
from skyc.cli.options import (
    OPTIMIZE_CHOICES,
    check_choice,
    cpus_option,
    disk_size_option,
    env_file_option,
    gpus_option,
    instance_type_option,
    memory_option,
    num_nodes_option,
    one_infra,
    use_spot_option,
)
from skyc.cli.output import console
from skyc.cli.plan_stacks import plan_stacks, print_policy, print_stacks
from skyc.cli.task_flags import TaskFlags

if TYPE_CHECKING:
    from skyc.catalog import Catalog
    from skyc.model.plan import Placement, Plan
    from skyc.optimizer.pipeline_cost import RunCost
    from skyc.settings.config import SkycConfig
    from skyc.settings.infra import PlanScope
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
    :func:`skyc.cli.plan_stacks.stack_entry`) and ``notes`` (the plan's scope:
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


def _acc_text(p: Placement) -> str:
    if not p.accelerators:
        return "-"
    return ", ".join(f"{k}:{v:g}" for k, v in sorted(p.accelerators.items()))


def _per_node(p: Placement) -> float:
    return p.hourly_cost / max(p.num_nodes, 1)


def _egress_note(plan: Plan, index: int) -> str:
    """Why a pipeline step's chosen row may be dearer than another: data transfer."""
    tp = plan.tasks[index]
    cheaper = [a for a in tp.alternatives if a.hourly_cost < tp.placement.hourly_cost - 1e-9]
    if cheaper and plan.objective == "run":  # ranked by the whole run, not per hour
        return tp.reason
    if cheaper and "data transfer" in tp.reason:
        cost = (f"${plan.egress_cost:.2f} in all" if plan.egress_cost
                else "none, here: the steps share a region")
        return ("chosen over cheaper rows to keep the pipeline's data transfer low "
                f"(data transfer: {cost})")
    return ""


_COLUMNS = ("", "infra", "instance", "nodes", "vCPUs", "memory", "accelerators",
            "$/hr/node", "$/hr total")
# Dropped first when the terminal is too narrow; infra, instance and prices never are.
# The chosen row's mark goes last of all: that row is always the first.
_DROP_ORDER = ("memory", "vCPUs", "nodes", "accelerators", "")


def suspicious_placements(plan: Plan, cat: Any) -> set[int]:
    """Placements priced far below their instance type elsewhere (a catalog error?):
    shown only when the task pins that type and region. By ``id()`` of the placement."""
    from skyc.catalog import Offer
    from skyc.catalog.suspicious import suspicious_offers

    out = set()
    for tp in plan.tasks:
        for p in [tp.placement, *tp.alternatives]:
            if p.use_spot or not p.instance_type or p.region is None:
                continue
            acc, count = next(iter(sorted((p.accelerators or {}).items())), (None, 0.0))
            offer = Offer(cloud=p.cloud, region=p.region, zone=p.zone,
                          instance_type=p.instance_type, accelerator=acc,
                          accelerator_count=count, accelerator_memory_gib=None, vcpus=None,
                          memory_gib=None, price=_per_node(p), spot_price=None)
            if suspicious_offers([offer], cat.median_price):
                out.add(id(p))
    return out


def _rows(plan: Plan, index: int, odd: set[int]) -> list[tuple[str, ...]]:
    tp = plan.tasks[index]
    out: list[tuple[str, ...]] = []
    for i, p in enumerate([tp.placement, *tp.alternatives]):
        spot = " spot" if p.use_spot else " suspicious" if id(p) in odd else ""
        out.append((
            "✔" if i == 0 else "", p.short_infra, p.instance_type or "-", str(p.num_nodes),
            f"{p.vcpus:g}" if p.vcpus is not None else "-",
            f"{p.memory_gib:g} GiB" if p.memory_gib is not None else "-",
            _acc_text(p), f"{_per_node(p):.4f}{spot}", f"{p.hourly_cost:.4f}",
        ))
    return out


# A pipeline of more tasks than this is shown as one table, a row per task (its choice);
# each task's alternatives stay in --format json.
SUMMARY_FROM_TASKS = 13
_SUMMARY_COLUMNS = ("task", "infra", "instance", "nodes", "accelerators", "$/hr/node",
                    "$/hr total")


def _summary_rows(plan: Plan, odd: set[int]) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    for index, tp in enumerate(plan.tasks):
        row = _rows(plan, index, odd)[0]
        out.append((tp.name, row[1], row[2], row[3], row[6], row[7], row[8]))
    return out


def _print_task_tables(plan: Plan, odd: set[int]) -> None:
    from skyc.cli.output import fitted_table, print_table, print_text

    if len(plan.tasks) >= SUMMARY_FROM_TASKS:
        print_table(fitted_table(
            f"{len(plan.tasks)} tasks: the placement chosen for each", _SUMMARY_COLUMNS,
            _summary_rows(plan, odd), right=("nodes", "$/hr/node", "$/hr total"),
            drop=("nodes", "accelerators")))
        print_text("  each task's alternatives: --format json (or plan that task alone)")
        return
    for index, tp in enumerate(plan.tasks):
        table = fitted_table(f"task {tp.name}", _COLUMNS, _rows(plan, index, odd),
                             right=("nodes", "vCPUs", "memory", "$/hr/node", "$/hr total"),
                             drop=_DROP_ORDER)
        if table.columns[0].header != "":
            table.title = f"task {tp.name} (chosen: the first row)"
        print_table(table)
        note = _egress_note(plan, index)
        if note:
            print_text(f"  note: {note}")


def _print_plan(plan: Plan, parallel: bool = False, odd: set[int] | None = None,
                run: RunCost | None = None) -> None:
    from skyc.cli.output import print_text
    from skyc.cli.plan_cost import print_run_cost, total_line

    _print_task_tables(plan, odd or set())
    if run is not None:
        print_run_cost(run, plan)
    print_text(_verdict(plan, parallel))
    if run is not None and (len(run.steps) > 1 or run.total_cost is not None):
        print_text(total_line(run))
    if odd:
        print_text("suspicious: priced far below the same instance type in other regions "
                   "(a catalog error?); planned only because the task pins that type and "
                   "region")


def _step(tp: Any) -> str:
    p = tp.placement
    what = " ".join(x for x in (p.infra, p.instance_type) if x)
    nodes = f" x{p.num_nodes}" if p.num_nodes > 1 else ""
    return f"{what}{nodes} at ${_per_node(p):.4f}/hr/node, ${p.hourly_cost:.4f}/hr total"


def _verdict(plan: Plan, parallel: bool = False) -> str:
    src = f"catalog {plan.catalog.source} {plan.catalog.date}" if plan.catalog else ""
    egress = f"; + ${plan.egress_cost:.2f} data transfer" if plan.egress_cost else ""
    if len(plan.tasks) == 1:
        tp = plan.tasks[0]
        return f"plan: {tp.name}: {_step(tp)}{egress} (optimize {plan.optimize}; {src})"
    if len(plan.tasks) >= SUMMARY_FROM_TASKS:
        steps = f"{len(plan.tasks)} tasks as in the table"
    else:
        steps = "; ".join(f"{t.name}: {_step(t)}" for t in plan.tasks)
    if parallel:
        return (f"plan: {steps}; together ${plan.hourly_cost:.4f}/hr total (the tasks run "
                f"at once){egress} (optimize {plan.optimize}; {src})")
    from skyc.cli.output import names_text

    peak = names_text([plan.tasks[i].name for i in plan.peak_tasks or range(len(plan.tasks))])
    return (f"plan: {steps}{egress}; at the peak ${plan.hourly_cost:.4f}/hr total ({peak}: "
            f"the steps run one after another, so their hourly prices are not added up; "
            f"optimize {plan.optimize}; {src})")


def _diff_with_progress(tasks: list[Any], plan: Plan, names: list[str], **kwargs: Any
                        ) -> list[dict[str, Any]]:
    """plan_stacks, saying on stderr which stack's engine runs (a spinner on a
    terminal, one line each otherwise): an engine plan takes tens of seconds."""
    import time

    from skyc.cli.output import err_console, print_line

    start = time.monotonic()
    total = len(names)
    status: Any = None

    def on_stack(cluster: str, engine: str) -> None:
        index = names.index(cluster) + 1
        text = (f"engine diff {index}/{total}: {engine} plan for stack {cluster} "
                "(--no-diff skips it)")
        if status is not None:
            status.update(text)
        else:
            print_line(text, err=True)

    if err_console.is_terminal:
        with err_console.status("engine diff...") as status:
            stacks = plan_stacks(tasks, plan, names, on_stack=on_stack, **kwargs)
    else:
        stacks = plan_stacks(tasks, plan, names, on_stack=on_stack, **kwargs)
    if any(st["status"] == "ok" for st in stacks):
        print_line(f"engine diff done in {time.monotonic() - start:.0f}s", err=True)
    return stacks


def _check_node_limits(plan: Plan) -> None:
    """Refuse a plan whose num_nodes is more than its target supports."""
    from skyc.apply.preflight import node_limit_problem
    from skyc.errors import Refused

    for tp in plan.tasks:
        problem = node_limit_problem(tp.placement.cloud, tp.placement.num_nodes)
        if problem is not None:
            raise Refused(f"task '{tp.name}' on {tp.placement.infra}", [problem])


class _PlanRequest(NamedTuple):
    """What ``skyc plan`` was asked for: its options, checked."""

    fmt: str
    optimize: str
    where: str | None  # --infra
    catalog: Path | None
    cluster: str | None
    diff: bool
    engine: str | None
    out: Path | None
    policy_file: Path | None
    detailed_exitcode: bool
    hours: float | None
    flags: TaskFlags


class _Loaded(NamedTuple):
    """The tasks of every task file named, in order."""

    tasks: list[Task]
    files_of: list[Path]  # each task's file
    task_file: Path  # the first file named
    parallel: bool  # independent tasks (several files, or a parallel header)


class _Planned(NamedTuple):
    """The plan, and what it was made with."""

    names: list[str]  # the clusters to diff ([] with --no-diff)
    config: SkycConfig
    scope: PlanScope
    cat: Catalog
    plan: Plan
    run: RunCost
    excluded: list[str]  # what the policy ruled out, per task


class _Notes(NamedTuple):
    """What is said beside the plan: its scope, the policy's exclusions, what apply
    would refuse, a cheaper disabled cloud, the --hours total."""

    lines: list[str]
    refusals: list[str]
    cheaper: dict[str, Any] | None
    clusters: list[str]  # each task's cluster


def plan_cmd(
    task_paths: list[Path] = plan_options.TASKS,
    infra: list[str] = plan_options.INFRA,
    catalog: Path | None = plan_options.CATALOG,
    optimize: str = plan_options.OPTIMIZE,
    fmt: str = plan_options.FORMAT,
    env: list[str] = plan_options.ENV,
    secret: list[str] = plan_options.SECRET,
    cluster: str | None = plan_options.CLUSTER,
    gpus: str | None = gpus_option(),
    cpus: str | None = cpus_option(),
    memory: str | None = memory_option(),
    instance_type: str | None = instance_type_option(),
    disk_size: int | None = disk_size_option(),
    use_spot: bool | None = use_spot_option(),
    num_nodes: int | None = num_nodes_option(),
    env_file: Path | None = env_file_option(),
    diff: bool = plan_options.DIFF,
    engine: str | None = plan_options.ENGINE,
    out: Path | None = plan_options.OUT,
    policy_file: Path | None = plan_options.POLICY,
    detailed_exitcode: bool = plan_options.DETAILED_EXITCODE,
    hours: float | None = plan_options.HOURS,
) -> None:
    check_choice("--format", fmt, ("table", "json", "markdown"))
    check_choice("--optimize", optimize, OPTIMIZE_CHOICES)
    flags = TaskFlags(env=env, env_file=env_file, secret=secret, gpus=gpus, cpus=cpus,
                      memory=memory, instance_type=instance_type, disk_size=disk_size,
                      use_spot=use_spot, num_nodes=num_nodes)
    req = _PlanRequest(fmt, optimize, one_infra(infra), catalog, cluster, diff, engine, out,
                       policy_file, detailed_exitcode, hours, flags)
    loaded = _load_plan_tasks(req, task_paths)
    planned = _optimize_plan(req, loaded)
    notes = _plan_notes(req, loaded, planned)
    _show_placement(req, loaded, planned, notes)
    from skyc.cli.plan_stacks import check_policy, plan_exit_code

    # Before the engine diff: a policy file that cannot be read fails fast.
    policy = check_policy(policy_file, loaded.task_file, loaded.tasks, planned.plan,
                          notes.clusters, planned.config)
    stacks = _engine_plans(req, loaded, planned, notes.clusters)
    if fmt in ("json", "markdown"):
        _print_document(req, loaded, planned, notes, policy, stacks)
    else:
        if stacks:
            print_stacks(stacks)
        print_policy(policy)
    code = plan_exit_code(policy, stacks, detailed_exitcode, planned.plan, notes.clusters)
    if code:
        raise typer.Exit(code)


def _load_plan_tasks(req: _PlanRequest, task_paths: list[Path]) -> _Loaded:
    """Every task file's tasks (their warnings said); --cluster needs exactly one."""
    from skyc.cli.output import print_warning
    from skyc.cli.plan_stacks import expand_task_files
    from skyc.errors import ConfigError
    from skyc.task import load_tasks

    if req.cluster is not None and not req.diff:
        raise ConfigError("--cluster names the cluster to diff against; it has no use "
                          "with --no-diff", hint="drop one of them")
    task_files = expand_task_files(task_paths)
    task_file = task_files[0]
    tasks: list[Task] = []
    files_of: list[Path] = []
    parallel = len(task_files) > 1  # tasks of several files are independent
    for path in task_files:
        task_set = load_tasks(path, env=req.flags.env_values(), secrets=req.flags.secrets(),
                              overrides=req.flags.overrides())
        for warning in task_set.warnings:
            print_warning(warning.render())
        tasks += list(task_set.tasks)
        files_of += [path] * len(task_set.tasks)
        parallel = parallel or (task_set.header is not None
                                and task_set.header.execution == "parallel")
    if req.cluster is not None and len(tasks) != 1:
        raise ConfigError(
            f"--cluster names one cluster, but {task_file} holds {len(tasks)} tasks",
            hint="drop --cluster: each task's cluster is named after the task",
        )
    return _Loaded(tasks, files_of, task_file, parallel)


def _optimize_plan(req: _PlanRequest, loaded: _Loaded) -> _Planned:
    """The optimizer's plan over the infra in scope, within the policy's constraint."""
    from skyc.cli.plan_cost import durations_of
    from skyc.cli.plan_stacks import policy_constraint
    from skyc.optimizer import optimize as run_optimizer
    from skyc.optimizer.pipeline_cost import run_cost
    from skyc.settings.config import load_config
    from skyc.settings.infra import catalog_for, plan_scope

    tasks = loaded.tasks
    names: list[str] = []
    if req.diff:
        from skyc.model.cluster_names import cluster_names_for

        names = cluster_names_for(tasks, req.cluster)
    config = load_config()
    scope = plan_scope(config, tasks, infra=req.where, catalog_dir=req.catalog, fall_back=True)
    cat = catalog_for(config, tasks, infra=req.where, catalog_dir=req.catalog, scope=scope)
    excluded: list[str] = []
    plan = run_optimizer(tasks, cat, target="time" if req.optimize == "time" else "cost",
                         infra=req.where, edges=[] if loaded.parallel else None,
                         allowed=policy_constraint(req.policy_file, loaded.task_file, config),
                         report=lambda task, note: excluded.append(f"{task}: {note}"))
    _check_node_limits(plan)
    run = run_cost(plan, durations_of(tasks), "parallel" if loaded.parallel else "serial")
    return _Planned(names, config, scope, cat, plan, run, excluded)


def _plan_notes(req: _PlanRequest, loaded: _Loaded, planned: _Planned) -> _Notes:
    from skyc.apply.preflight import apply_refusals
    from skyc.cli.scope_notes import cheaper_elsewhere, cheaper_line, scope_lines
    from skyc.model.cluster_names import cluster_names_for

    plan = planned.plan
    lines = scope_lines(planned.scope) + [f"policy: {note}" for note in planned.excluded]
    clusters = planned.names or cluster_names_for(loaded.tasks, req.cluster)
    refusals = apply_refusals(loaded.tasks, plan, clusters)
    lines += refusals
    cheaper = cheaper_elsewhere(loaded.tasks, plan, planned.scope, planned.config,
                                infra=req.where, catalog_dir=req.catalog,
                                target=req.optimize, parallel=loaded.parallel)
    if cheaper:
        lines.append(cheaper_line(cheaper, plan))
    if req.hours is not None:
        lines.append(_hours_line(plan, req.hours))
    return _Notes(lines, refusals, cheaper, clusters)


def _show_placement(req: _PlanRequest, loaded: _Loaded, planned: _Planned,
                    notes: _Notes) -> None:
    """The table and its notes; with --format json or markdown, the notes on stderr."""
    from skyc.cli.output import print_warning

    if req.fmt == "table":
        from skyc.cli.output import print_text

        plan = planned.plan
        _print_plan(plan, loaded.parallel, suspicious_placements(plan, planned.cat),
                    planned.run)
        for line in notes.lines:
            print_text(line)
    else:
        for line in notes.lines:
            print_warning(line)


def _engine_plans(req: _PlanRequest, loaded: _Loaded, planned: _Planned,
                  clusters: list[str]) -> list[dict[str, Any]] | None:
    """Each stack's engine diff (None with --no-diff); with -o, the plan saved."""
    stacks = None
    artifacts = None
    if req.diff or req.out is not None:  # the engine plans, for a saved plan
        from skyc.review.planfile import Artifacts

        artifacts = Artifacts()
    if req.diff:
        stacks = _diff_with_progress(loaded.tasks, planned.plan, planned.names,
                                     catalog=req.catalog, target=req.optimize,
                                     config=planned.config, engine=req.engine,
                                     on_plan=artifacts)
    if req.out is not None:
        from skyc.cli.plan_stacks import save_plan

        assert artifacts is not None
        save_plan(req.out, loaded.files_of, loaded.tasks, clusters, planned.plan,
                  stacks or [], artifacts, planned.config, infra=req.where,
                  catalog=req.catalog, optimize=req.optimize, engine=req.engine,
                  cluster=req.cluster, env=req.flags.env_values(),
                  overrides=req.flags.overrides())
    return stacks


def _print_document(req: _PlanRequest, loaded: _Loaded, planned: _Planned, notes: _Notes,
                    policy: dict[str, Any] | None, stacks: list[dict[str, Any]] | None
                    ) -> None:
    """--format json or markdown: the plan's document (or the review comment)."""
    from skyc.cli.output import print_warning
    from skyc.cli.plan_stacks import review_outputs

    for st in stacks or []:
        if st["status"] != "ok":
            print_warning(f"{st['note']}; `skyc plan --no-diff` skips the diff")
    scope = planned.scope
    doc_notes = {k: v for k, v in (("plan_only", list(scope.plan_only)),
                                   ("skipped", list(scope.skipped)),
                                   ("cheaper_elsewhere", notes.cheaper),
                                   ("apply_refusals", notes.refusals)) if v}
    doc = plan_document(planned.plan, stacks, doc_notes, planned.run)
    comment = review_outputs(doc, fmt=req.fmt, tasks=loaded.tasks, plan=planned.plan,
                             names=notes.clusters, stacks=stacks, policy=policy,
                             config=planned.config, engine=req.engine, hours=req.hours,
                             out=req.out)
    typer.echo(comment if comment is not None else json.dumps(doc, indent=2,
                                                               sort_keys=True))


def _hours_line(plan: Plan, hours: float) -> str:
    """What ``--hours N`` adds to the table: every cluster for N hours, at the planned
    prices (as the JSON's ``run_total``)."""
    from skyc.optimizer.pipeline_cost import hours_text

    total = sum(t.placement.hourly_cost for t in plan.tasks) * hours
    each = " (each cluster for that long)" if len(plan.tasks) > 1 else ""
    return f"for {hours_text(hours)}: ${total:,.2f} at the planned prices{each}"


def check(
    refresh: bool = typer.Option(
        False, "--refresh",
        help="Read every kubeconfig context's nodes now (needs access) and cache them for "
             "offline planning."),
    fmt: str = typer.Option("table", "--format", metavar="table|json",
                            help="table, or json (format_version 1.1, infra: name, enabled, "
                            "reason, details, credentials: found or not; null where "
                            "none are needed)."),
) -> None:
    """Which infra skyc plans with, and why; what each Kubernetes context offers."""
    from rich.markup import escape

    from skyc.cli.output import safe
    from skyc.settings.config import load_config
    from skyc.settings.infra import check_infra

    check_choice("--format", fmt, ("table", "json"))
    config = load_config()
    if refresh:
        from skyc.compiler.kubernetes.credentials import credentials
        from skyc.compiler.kubernetes.discovery import refresh_contexts

        names = [c.name for c in credentials().contexts]
        for name, problem in refresh_contexts(names):
            line = f"kubernetes/{name}: " + (problem or "nodes read")
            console.print(escape(safe(line)), soft_wrap=True)
    found = check_infra(config)
    if fmt == "json":
        typer.echo(json.dumps({"format_version": "1.1", "infra": [
            {"name": st.name, "enabled": st.enabled, "reason": st.reason,
             "details": list(st.details), "credentials": st.credentials}
            for st in found]}, indent=2, sort_keys=True))
        return
    for st in found:
        mark = "[green]enabled[/]" if st.enabled else "[dim]disabled[/]"
        console.print(f"{st.name:<12} {mark}  {st.reason}", soft_wrap=True)
        for line in st.details:
            console.print(f"  {escape(safe(line))}", soft_wrap=True)


catalog_app = typer.Typer(help="Price catalogs.", no_args_is_help=True)


@catalog_app.command("update")
def catalog_update(
    source: str | None = typer.Option(
        None, "--from", metavar="DIR|URL",
        help="Directory or URL in SkyPilot's layout (<cloud>/vms.csv), e.g. "
             "https://raw.githubusercontent.com/skypilot-org/skypilot-catalog/master/catalogs/v8",
    ),
) -> None:
    """Copy a catalog into $SKYC_HOME/catalog/ (it then takes precedence over the bundled one)."""
    from skyc.catalog import update_catalog
    from skyc.errors import ConfigError
    from skyc.settings.config import skyc_home

    if not source:
        raise ConfigError(
            "catalog update needs --from DIR_OR_URL (nothing is fetched unless asked)",
            hint="e.g. --from https://raw.githubusercontent.com/skypilot-org/"
                 "skypilot-catalog/master/catalogs/v8",
        )
    dest = skyc_home() / "catalog"
    clouds = update_catalog(source, dest)
    console.print(f"catalog updated in {dest}: {', '.join(clouds)}", soft_wrap=True)


def register(app: typer.Typer) -> None:
    from skyc.cli.plan_stacks import json_errors

    app.command("plan", help=plan_options.PLAN_HELP)(json_errors(plan_cmd))
    app.command("check")(check)
    app.add_typer(catalog_app, name="catalog")
