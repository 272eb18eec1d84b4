"""``skyc plan``, ``skyc check`` and ``skyc catalog update``.

``skyc plan`` parses its options, calls :func:`skyc.apply.plan_diff.plan_with_diff`
and prints: the placement's tables here, the per-cluster stacks' diffs with
:mod:`skyc.cli.plan_stacks`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
from skyc.cli.plan_stacks import (
    StackProgress,
    print_policy,
    print_saved,
    print_stacks,
    print_unknown,
)
from skyc.cli.task_flags import TaskFlags

if TYPE_CHECKING:
    from skyc.apply.plan_diff import PlacedPlan, PlanResult
    from skyc.model.plan import Placement, Plan
    from skyc.optimizer.pipeline_cost import RunCost


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


class _PlanPrinter(StackProgress):
    """What ``skyc plan`` prints as it plans: the task files' warnings, then the
    placement's table and its notes (with --format json or markdown, the notes on
    stderr) before any engine runs, then the engine diff's progress."""

    def __init__(self, fmt: str) -> None:
        super().__init__()
        self.fmt = fmt

    def warning(self, text: str) -> None:
        from skyc.cli.output import print_warning

        print_warning(text)

    def placed(self, placed: PlacedPlan) -> None:
        from skyc.cli.output import print_warning

        if self.fmt == "table":
            from skyc.cli.output import print_text

            plan = placed.plan
            _print_plan(plan, placed.parallel, suspicious_placements(plan, placed.catalog),
                        placed.run_cost)
            for line in placed.notes:
                print_text(line)
        else:
            for line in placed.notes:
                print_warning(line)


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
    from skyc.apply.plan_diff import PlanDiffOptions, plan_with_diff

    check_choice("--format", fmt, ("table", "json", "markdown"))
    check_choice("--optimize", optimize, OPTIMIZE_CHOICES)
    flags = TaskFlags(env=env, env_file=env_file, secret=secret, gpus=gpus, cpus=cpus,
                      memory=memory, instance_type=instance_type, disk_size=disk_size,
                      use_spot=use_spot, num_nodes=num_nodes)
    options = PlanDiffOptions(
        infra=one_infra(infra), catalog_dir=catalog, optimize=optimize, cluster=cluster,
        diff=diff, engine=engine, out=out, policy_file=policy_file,
        detailed_exitcode=detailed_exitcode, hours=hours, env=flags.env_values(),
        secrets=flags.secrets(), overrides=flags.overrides())
    printer = _PlanPrinter(fmt)
    try:
        result = plan_with_diff(task_paths, options, printer)
    finally:
        printer.close()
    _print_result(result, fmt)


def _print_result(result: PlanResult, fmt: str) -> None:
    """The saved plan file, the stacks' diffs and the policy's verdict (or the plan's
    document), then why the exit code is 1 when it is not known what changes."""
    from skyc.cli.output import print_warning

    if result.saved is not None:
        print_saved(result.saved)
    if fmt in ("json", "markdown"):
        for st in result.stacks or []:
            if st["status"] != "ok":
                print_warning(f"{st['note']}; `skyc plan --no-diff` skips the diff")
        typer.echo(result.markdown() if fmt == "markdown"
                   else json.dumps(result.document(), indent=2, sort_keys=True))
    else:
        if result.stacks:
            print_stacks(result.stacks)
        print_policy(result.policy)
    print_unknown(result.unknown)
    if result.exit_code:
        raise typer.Exit(result.exit_code)


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

    from skyc.apply.infra import check_infra
    from skyc.cli.output import safe
    from skyc.settings.config import load_config

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
    from skyc.cli.output import json_errors

    app.command("plan", help=plan_options.PLAN_HELP)(json_errors(plan_cmd))
    app.command("check")(check)
    app.add_typer(catalog_app, name="catalog")
