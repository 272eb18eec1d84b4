"""``skyc plan``, ``skyc check`` and ``skyc catalog update``.

The plan's per-cluster stack diffs are in :mod:`skyc.cli.plan_stacks`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from skyc.cli.options import (
    INFRA_HELP,
    OPTIMIZE_CHOICES,
    check_choice,
    cpus_option,
    disk_size_option,
    env_file_option,
    env_values,
    gpus_option,
    instance_type_option,
    memory_option,
    num_nodes_option,
    one_infra,
    use_spot_option,
)
from skyc.cli.output import console
from skyc.cli.plan_stacks import plan_stacks, print_stacks

if TYPE_CHECKING:
    from skyc.optimizer.pipeline_cost import RunCost
    from skyc.optimizer.plan import Placement, Plan

_OPTIMIZE_HELP = (
    "cost: cheapest hourly price x num_nodes (spot price when use_spot). "
    "time: fastest by the time model, hours = 1 / (relative accelerator throughput "
    "(H100 = 1) x count x num_nodes); CPU-only nodes all count alike, so cost breaks ties. "
    "When every task has _metadata.skyc.duration: the whole run (cost: $/hr total x its "
    "hours there; time: those hours), data transfer included."
)


_DIFF_HELP = (
    "Show each stack's engine diff against the cluster's current state (the default; "
    "runs `terraform init/plan` in $SKYC_HOME/clusters/<name>/, changing no resources). "
    "--no-diff: placement only."
)

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


def _print_plan(plan: Plan, parallel: bool = False, odd: set[int] | None = None,
                run: RunCost | None = None) -> None:
    from skyc.cli.output import fitted_table, print_table, print_text
    from skyc.cli.plan_cost import print_run_cost, total_line

    for index, tp in enumerate(plan.tasks):
        table = fitted_table(f"task {tp.name}", _COLUMNS, _rows(plan, index, odd or set()),
                             right=("nodes", "vCPUs", "memory", "$/hr/node", "$/hr total"),
                             drop=_DROP_ORDER)
        if table.columns[0].header != "":
            table.title = f"task {tp.name} (chosen: the first row)"
        print_table(table)
        note = _egress_note(plan, index)
        if note:
            print_text(f"  note: {note}")
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
    steps = "; ".join(f"{t.name}: {_step(t)}" for t in plan.tasks)
    if parallel:
        return (f"plan: {steps}; together ${plan.hourly_cost:.4f}/hr total (the tasks run "
                f"at once){egress} (optimize {plan.optimize}; {src})")
    peak = ", ".join(plan.tasks[i].name for i in plan.peak_tasks or range(len(plan.tasks)))
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


def plan_cmd(
    task_paths: list[Path] = typer.Argument(
        ..., metavar="TASK",
        help="Task YAML (one task or a pipeline); several, or a directory of them, make "
        "one plan of independent tasks."),
    infra: list[str] = typer.Option([], "--infra", metavar="INFRA", help=INFRA_HELP),
    catalog: Path | None = typer.Option(None, "--catalog", metavar="DIR",
                                        help="Catalog dir (<cloud>/vms.csv)."),
    optimize: str = typer.Option("cost", "--optimize", metavar="cost|time", help=_OPTIMIZE_HELP),
    fmt: str = typer.Option("table", "--format", metavar="table|json|markdown",
                            help="table, json, or markdown (a pull-request comment)."),
    env: list[str] = typer.Option([], "--env", metavar="KEY[=VAL]",
                                  help="KEY=VAL (or KEY, from this environment)."),
    secret: list[str] = typer.Option([], "--secret", metavar="KEY[=VAL]",
                                     help="KEY=VAL, or KEY from this environment."),
    cluster: str | None = typer.Option(
        None, "-c", "--cluster", metavar="CLUSTER",
        help="Cluster name for a one-task file (default: the task's)."),
    gpus: str | None = gpus_option(),
    cpus: str | None = cpus_option(),
    memory: str | None = memory_option(),
    instance_type: str | None = instance_type_option(),
    disk_size: int | None = disk_size_option(),
    use_spot: bool | None = use_spot_option(),
    num_nodes: int | None = num_nodes_option(),
    env_file: Path | None = env_file_option(),
    diff: bool = typer.Option(True, "--diff/--no-diff", help=_DIFF_HELP),
    engine: str | None = typer.Option(
        None, "--engine", metavar="terraform|pulumi",
        help="terraform or pulumi (default: the config's, else the target's first)."),
    out: Path | None = typer.Option(
        None, "-o", "--out", metavar="FILE",
        help="Save the plan (tasks without secret values, placements, stacks, engine "
        "plans, input digests) for `skyc apply FILE`."),
    policy_file: Path | None = typer.Option(
        None, "--policy", metavar="FILE",
        help="Policy file (default: skyc-policy.yaml beside the task, else the config's "
        "policy:). A violation makes plan exit 1."),
    detailed_exitcode: bool = typer.Option(
        False, "--detailed-exitcode",
        help="Exit 0 when no stack changes, 2 when some do, 1 on an error or a policy "
        "violation (usage errors exit 2 too: check stderr)."),
    hours: float | None = typer.Option(
        None, "--hours", metavar="N", min=0,
        help="A one-shot run's length: cost adds its total for N hours."),
) -> None:
    """Pick where each task runs: the cheapest (or fastest) feasible offer.

    CPU-only tasks that give no cpus, memory or instance type get 4+ vCPUs from
    each cloud's general-purpose family (m6i, n2-standard, Standard_D<N>s_v5).
    Ordered resources: an earlier entry wins over a cheaper later one. Ties break
    on cloud, region, zone, instance type. Pipelines add the cost of the data a
    task passes on (its outputs, GB) when the next task runs elsewhere.

    Prices: $/hr/node for one node, $/hr total for all of a task's nodes. With no
    cloud enabled (no credentials), the plan covers every cloud skyc can provision
    and says it is plan-only; with some enabled, one line says when a disabled
    cloud would be cheaper. Clouds skyc cannot provision are skipped, and said so.

    Then, per cluster, the engine's diff against the cluster's current state: all
    creates for a new cluster, only what changes for an existing one (a cluster
    that is up keeps its region, as in `skyc apply`). When the diff cannot be
    computed (no terraform, providers missing) the placement is still printed,
    with a warning per stack. --format json adds "stacks": per cluster its
    resource_changes with terraform-style actions (["create"], ["update"],
    ["delete"], ["no-op"], ["read"], and ["delete", "create"] for a replacement).
    """
    from skyc.cli.output import print_warning
    from skyc.cli.scope_notes import cheaper_elsewhere, cheaper_line, scope_lines
    from skyc.errors import ConfigError
    from skyc.optimizer import optimize as run_optimizer
    from skyc.settings.config import load_config
    from skyc.settings.infra import catalog_for, plan_scope
    from skyc.task import load_tasks, parse_secret_flags

    check_choice("--format", fmt, ("table", "json", "markdown"))
    check_choice("--optimize", optimize, OPTIMIZE_CHOICES)
    where = one_infra(infra)
    if cluster is not None and not diff:
        raise ConfigError("--cluster names the cluster to diff against; it has no use "
                          "with --no-diff", hint="drop one of them")
    from skyc.cli.plan_stacks import expand_task_files
    from skyc.task.overrides import resource_overrides

    task_files = expand_task_files(task_paths)
    task_file = task_files[0]
    tasks = []
    files_of: list[Path] = []   # each task's file
    parallel = len(task_files) > 1  # tasks of several files are independent
    for path in task_files:
        task_set = load_tasks(path, env=env_values(env_file, env),
                              secrets=parse_secret_flags(secret),
                              overrides=resource_overrides(gpus=gpus, cpus=cpus, memory=memory,
                                           instance_type=instance_type, disk_size=disk_size,
                                           use_spot=use_spot, num_nodes=num_nodes))
        for warning in task_set.warnings:
            print_warning(warning.render())
        tasks += list(task_set.tasks)
        files_of += [path] * len(task_set.tasks)
        parallel = parallel or (task_set.header is not None
                                and task_set.header.execution == "parallel")
    if cluster is not None and len(tasks) != 1:
        raise ConfigError(
            f"--cluster names one cluster, but {task_file} holds {len(tasks)} tasks",
            hint="drop --cluster: each task's cluster is named after the task",
        )
    names: list[str] = []
    if diff:
        from skyc.model.cluster_names import cluster_names_for

        names = cluster_names_for(tasks, cluster)
    config = load_config()
    scope = plan_scope(config, tasks, infra=where, catalog_dir=catalog, fall_back=True)
    cat = catalog_for(config, tasks, infra=where, catalog_dir=catalog, scope=scope)
    from skyc.cli.plan_stacks import policy_constraint

    excluded: list[str] = []
    plan = run_optimizer(tasks, cat, target="time" if optimize == "time" else "cost",
                         infra=where, edges=[] if parallel else None,
                         allowed=policy_constraint(policy_file, task_file, config),
                         report=lambda task, note: excluded.append(f"{task}: {note}"))
    _check_node_limits(plan)
    from skyc.cli.plan_cost import durations_of
    from skyc.optimizer.pipeline_cost import run_cost

    run = run_cost(plan, durations_of(tasks), "parallel" if parallel else "serial")
    lines = scope_lines(scope) + [f"policy: {note}" for note in excluded]
    from skyc.apply.preflight import apply_refusals
    from skyc.model.cluster_names import cluster_names_for

    refusals = apply_refusals(tasks, plan, names or cluster_names_for(tasks, cluster))
    lines += refusals
    cheaper = cheaper_elsewhere(tasks, plan, scope, config, infra=where, catalog_dir=catalog,
                                target=optimize, parallel=parallel)
    if cheaper:
        lines.append(cheaper_line(cheaper, plan))
    if hours is not None:
        lines.append(_hours_line(plan, hours))
    if fmt == "table":
        from skyc.cli.output import print_text

        _print_plan(plan, parallel, suspicious_placements(plan, cat), run)
        for line in lines:
            print_text(line)
    else:
        for line in lines:
            print_warning(line)
    from skyc.cli.plan_stacks import check_policy, plan_exit_code, print_policy, review_outputs

    clusters = names or cluster_names_for(tasks, cluster)
    # Before the engine diff: a policy file that cannot be read fails fast.
    policy = check_policy(policy_file, task_file, tasks, plan, clusters, config)
    stacks = None
    artifacts = None
    if diff or out is not None:  # the engine plans, for a saved plan
        from skyc.review.planfile import Artifacts

        artifacts = Artifacts()
    if diff:
        stacks = _diff_with_progress(tasks, plan, names, catalog=catalog, target=optimize,
                                     config=config, engine=engine, on_plan=artifacts)
    if out is not None:
        from skyc.cli.plan_stacks import save_plan

        assert artifacts is not None
        save_plan(out, files_of, tasks, clusters, plan,
                  stacks or [], artifacts, config, infra=where, catalog=catalog,
                  optimize=optimize, engine=engine, cluster=cluster,
                  env=env_values(env_file, env),
                  overrides=resource_overrides(gpus=gpus, cpus=cpus, memory=memory,
                                               instance_type=instance_type,
                                               disk_size=disk_size, use_spot=use_spot,
                                               num_nodes=num_nodes))
    if fmt in ("json", "markdown"):
        if stacks:
            for st in stacks:
                if st["status"] != "ok":
                    print_warning(f"{st['note']}; `skyc plan --no-diff` skips the diff")
        notes = {k: v for k, v in (("plan_only", list(scope.plan_only)),
                                   ("skipped", list(scope.skipped)),
                                   ("cheaper_elsewhere", cheaper),
                                   ("apply_refusals", refusals)) if v}
        doc = plan_document(plan, stacks, notes, run)
        comment = review_outputs(doc, fmt=fmt, tasks=tasks, plan=plan, names=clusters,
                                 stacks=stacks, policy=policy, config=config, engine=engine,
                                 hours=hours, out=out)
        typer.echo(comment if comment is not None else json.dumps(doc, indent=2,
                                                                   sort_keys=True))
    else:
        if stacks:
            print_stacks(stacks)
        print_policy(policy)
    code = plan_exit_code(policy, stacks, detailed_exitcode, plan, clusters)
    if code:
        raise typer.Exit(code)


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

    app.command("plan")(json_errors(plan_cmd))
    app.command("check")(check)
    app.add_typer(catalog_app, name="catalog")
