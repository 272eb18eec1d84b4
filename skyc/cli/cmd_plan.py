"""``skyc plan``, ``skyc show-gpus``, ``skyc check`` and ``skyc catalog update``.

The plan's per-cluster stack diffs are in :mod:`skyc.cli.plan_stacks`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from skyc.cli.output import console
from skyc.cli.plan_stacks import plan_stacks, print_stacks

if TYPE_CHECKING:
    from skyc.optimizer.plan import Placement, Plan

_OPTIMIZE_HELP = (
    "cost: cheapest hourly price x num_nodes (spot price when use_spot). "
    "time: fastest by the time model, hours = 1 / (relative accelerator throughput "
    "(H100 = 1) x count x num_nodes); CPU-only nodes all count alike, so cost breaks ties."
)


_DIFF_HELP = (
    "Show each stack's engine diff against the cluster's current state (the default; "
    "runs `terraform init/plan` in $SKYC_HOME/clusters/<name>/, changing no resources). "
    "--no-diff: placement only."
)

def plan_document(plan: Plan, stacks: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The JSON document of ``skyc plan --format json``.

    ``stacks`` (one entry per cluster, from
    :func:`skyc.cli.plan_stacks.stack_entry`) is added when given.
    """
    doc = plan.model_dump(mode="json")
    doc["tasks"] = [
        {"name": t["name"], "placement": t["placement"], "alternatives": t["alternatives"],
         "reason": t["reason"]}
        for t in doc["tasks"]
    ]
    if stacks is not None:
        doc["stacks"] = stacks
    return doc


def _print_wide(renderable: Any) -> None:
    """Tables keep their columns when the output is not a terminal (pipes, CI logs)."""
    if console.is_terminal:
        console.print(renderable)
        return
    from rich.console import Console

    from skyc.cli.output import escaping_hook

    wide = Console(highlight=False, width=max(console.width, 160))
    wide.push_render_hook(escaping_hook())
    wide.print(renderable)


def _acc_text(p: Placement) -> str:
    if not p.accelerators:
        return "-"
    return ", ".join(f"{k}:{v:g}" for k, v in sorted(p.accelerators.items()))


def _print_plan(plan: Plan) -> None:
    from rich.table import Table

    for tp in plan.tasks:
        table = Table(title=f"task {tp.name}", title_justify="left")
        for col in ("", "infra", "instance", "vCPUs", "memory", "accelerators", "$/hr"):
            table.add_column(col, justify="right" if col in ("vCPUs", "memory", "$/hr") else "left",
                             no_wrap=col in ("infra", "instance"))
        for i, p in enumerate([tp.placement, *tp.alternatives]):
            spot = " (spot)" if p.use_spot else ""
            nodes = f" x{p.num_nodes}" if p.num_nodes > 1 else ""
            table.add_row(
                "✔" if i == 0 else "", p.infra, f"{p.instance_type or '-'}{nodes}",
                f"{p.vcpus:g}" if p.vcpus is not None else "-",
                f"{p.memory_gib:g} GiB" if p.memory_gib is not None else "-",
                _acc_text(p), f"{p.hourly_cost:.4f}{spot}",
            )
        _print_wide(table)
    chosen = "; ".join(f"{t.name}: {t.placement.infra} {t.placement.instance_type or ''}".strip()
                       for t in plan.tasks)
    egress = f" + ${plan.egress_cost:.2f} data transfer" if plan.egress_cost else ""
    src = f"catalog {plan.catalog.source} {plan.catalog.date}" if plan.catalog else ""
    console.print(f"[bold]plan:[/] {chosen} at ${plan.hourly_cost:.4f}/hr{egress} "
                  f"(optimize {plan.optimize}; {src})", soft_wrap=True)


def _check_node_limits(plan: Plan) -> None:
    """Refuse a plan whose num_nodes is more than its target supports."""
    from skyc.preflight import Refused, node_limit_problem

    for tp in plan.tasks:
        problem = node_limit_problem(tp.placement.cloud, tp.placement.num_nodes)
        if problem is not None:
            raise Refused(f"task '{tp.name}' on {tp.placement.infra}", [problem])


def plan_cmd(
    task_file: Path = typer.Argument(..., help="Task YAML (one task or a pipeline)."),
    infra: str | None = typer.Option(
        None, "--infra", help="Restrict to a cloud, cloud/region or cloud/region/zone."),
    catalog: Path | None = typer.Option(None, "--catalog", help="Catalog dir (<cloud>/vms.csv)."),
    optimize: str = typer.Option("cost", "--optimize", help=_OPTIMIZE_HELP),
    fmt: str = typer.Option("table", "--format", help="table or json."),
    env: list[str] = typer.Option([], "--env", help="KEY=VAL (or KEY, from this environment)."),
    secret: list[str] = typer.Option([], "--secret", help="KEY=VAL, or KEY from this environment."),
    cluster: str | None = typer.Option(
        None, "-c", "--cluster", help="Cluster name for a one-task file (default: the task's)."),
    diff: bool = typer.Option(True, "--diff/--no-diff", help=_DIFF_HELP),
    engine: str | None = typer.Option(
        None, "--engine", help="terraform or pulumi (default: the config's, else the "
        "target's first)."),
) -> None:
    """Pick where each task runs: the cheapest (or fastest) feasible offer.

    CPU-only tasks that give no cpus, memory or instance type get 4+ vCPUs from
    each cloud's general-purpose family (m6i, n2-standard, Standard_D<N>s_v5).
    Ordered resources: an earlier entry wins over a cheaper later one. Ties break
    on cloud, region, zone, instance type. Pipelines add the cost of the data a
    task passes on (its outputs, GB) when the next task runs elsewhere.

    Then, per cluster, the engine's diff against the cluster's current state: all
    creates for a new cluster, only what changes for an existing one (a cluster
    that is up keeps its region, as in `skyc apply`). When the diff cannot be
    computed (no terraform, providers missing) the placement is still printed,
    with a warning per stack. --format json adds "stacks": per cluster its
    resource_changes with terraform-style actions (["create"], ["update"],
    ["delete"], ["no-op"], ["read"], and ["delete", "create"] for a replacement).
    """
    from skyc.config import load_config
    from skyc.errors import ConfigError
    from skyc.infra import catalog_for
    from skyc.launch import cluster_names_for
    from skyc.optimizer import optimize as run_optimizer
    from skyc.task import load_tasks, parse_env_flags, parse_secret_flags

    if fmt not in ("table", "json"):
        raise ConfigError(f"--format {fmt}: expected 'table' or 'json'")
    if cluster is not None and not diff:
        raise ConfigError("--cluster names the cluster to diff against; it has no use "
                          "with --no-diff", hint="drop one of them")
    if optimize not in ("cost", "time"):
        raise ConfigError(f"--optimize {optimize}: expected 'cost' or 'time'")
    task_set = load_tasks(task_file, env=parse_env_flags(env), secrets=parse_secret_flags(secret))
    from skyc.cli.output import print_warning

    for warning in task_set.warnings:
        print_warning(warning.render())
    tasks = list(task_set.tasks)
    if cluster is not None and len(tasks) != 1:
        raise ConfigError(
            f"--cluster names one cluster, but {task_file} holds {len(tasks)} tasks",
            hint="drop --cluster: each task's cluster is named after the task",
        )
    names = cluster_names_for(tasks, cluster) if diff else []
    config = load_config()
    cat = catalog_for(config, tasks, infra=infra, catalog_dir=catalog)
    parallel = task_set.header is not None and task_set.header.execution == "parallel"
    plan = run_optimizer(tasks, cat, target="time" if optimize == "time" else "cost",
                         infra=infra, edges=[] if parallel else None)
    _check_node_limits(plan)
    if fmt == "table":
        _print_plan(plan)
    stacks = None
    if diff:
        stacks = plan_stacks(tasks, plan, names, catalog=catalog, target=optimize,
                             config=config, engine=engine)
    if fmt == "json":
        if stacks:
            from skyc.cli.output import print_warning

            for st in stacks:
                if st["status"] != "ok":
                    print_warning(f"{st['note']}; `skyc plan --no-diff` skips the diff")
        typer.echo(json.dumps(plan_document(plan, stacks), indent=2, sort_keys=True))
    elif stacks:
        print_stacks(stacks)


def show_gpus(
    name: str | None = typer.Argument(None, help="Accelerator name (e.g. H100, a100-80gb)."),
    infra: str | None = typer.Option(None, "--infra", help="Restrict to a cloud or cloud/region."),
    all_regions: bool = typer.Option(False, "--all-regions", help="One row per region."),
    catalog: Path | None = typer.Option(None, "--catalog", help="Catalog dir (<cloud>/vms.csv)."),
) -> None:
    """What accelerators exist, in what counts, where, at what price."""
    from rich.table import Table

    from skyc.catalog import OfferQuery
    from skyc.config import load_config
    from skyc.errors import InfeasibleError
    from skyc.infra import catalog_for
    from skyc.optimizer import parse_infra

    cloud, region, zone = parse_infra(infra)
    cat = catalog_for(load_config(), infra=infra, catalog_dir=catalog, every_cloud=True)
    acc = None
    if name is not None:
        acc = cat.canonical_accelerator(name)
        if acc is None:
            known = sorted(set(cat.accelerator_names().values()))
            raise InfeasibleError(f"no accelerator named '{name}' in the catalog",
                                  hint="known: " + ", ".join(known))
    offers = [o for o in cat.offers(OfferQuery(cloud=cloud, region=region, zone=zone,
                                               accelerator=acc, any_accelerator=acc is None))
              if o.accelerator]
    groups: dict[tuple[str, ...], list[Any]] = {}
    for o in offers:
        key: tuple[str, ...] = (o.accelerator or "", f"{o.accelerator_count:g}", o.cloud,
                                o.instance_type or "-", o.region if all_regions else "")
        groups.setdefault(key, []).append(o)
    table = Table()
    cols = ["accelerator", "count", "cloud", "instance", "GiB/acc", "vCPUs", "$/hr", "spot $/hr"]
    cols += ["region"] if all_regions else ["regions"]
    for c in cols:
        table.add_column(c)
    for key in sorted(groups, key=lambda k: (k[0].lower(), float(k[1]), *k[2:])):
        rows = groups[key]
        prices = [o.price for o in rows if o.price is not None]
        spots = [o.spot_price for o in rows if o.spot_price is not None]
        first = rows[0]
        where = key[4] if all_regions else str(len({o.region for o in rows}))
        table.add_row(
            key[0], key[1], key[2], key[3],
            f"{first.accelerator_memory_gib:g}" if first.accelerator_memory_gib else "-",
            f"{first.vcpus:g}" if first.vcpus is not None else "-",
            f"{min(prices):.4f}" if prices else "-", f"{min(spots):.4f}" if spots else "-",
            where,
        )
    if not groups:
        raise InfeasibleError("no accelerators match" + (f" '{name}'" if name else "")
                              + (f" in {infra}" if infra else ""))
    _print_wide(table)
    console.print("prices: the lowest per row (USD/hour per node); "
                  + ("one row per region" if all_regions else "regions: how many offer it"))


def check(
    refresh: bool = typer.Option(
        False, "--refresh",
        help="Read every kubeconfig context's nodes now (needs access) and cache them for "
             "offline planning."),
) -> None:
    """Which infra skyc plans with, and why; what each Kubernetes context offers."""
    from rich.markup import escape

    from skyc.cli.output import safe
    from skyc.config import load_config
    from skyc.infra import check_infra

    config = load_config()
    if refresh:
        from skyc.compiler.kubernetes.credentials import credentials
        from skyc.compiler.kubernetes.discovery import refresh_contexts

        names = [c.name for c in credentials().contexts]
        for name, problem in refresh_contexts(names):
            line = f"kubernetes/{name}: " + (problem or "nodes read")
            console.print(escape(safe(line)), soft_wrap=True)
    for st in check_infra(config):
        mark = "[green]enabled[/]" if st.enabled else "[dim]disabled[/]"
        console.print(f"{st.name:<12} {mark}  {st.reason}", soft_wrap=True)
        for line in st.details:
            console.print(f"  {escape(safe(line))}", soft_wrap=True)


catalog_app = typer.Typer(help="Price catalogs.", no_args_is_help=True)


@catalog_app.command("update")
def catalog_update(
    source: str | None = typer.Option(
        None, "--from",
        help="Directory or URL in SkyPilot's layout (<cloud>/vms.csv), e.g. "
             "https://raw.githubusercontent.com/skypilot-org/skypilot-catalog/master/catalogs/v8",
    ),
) -> None:
    """Copy a catalog into $SKYC_HOME/catalog/ (it then takes precedence over the bundled one)."""
    from skyc.catalog import update_catalog
    from skyc.config import skyc_home
    from skyc.errors import ConfigError

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
    app.command("plan")(plan_cmd)
    app.command("show-gpus")(show_gpus)
    app.command("check")(check)
    app.add_typer(catalog_app, name="catalog")
