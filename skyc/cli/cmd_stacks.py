"""``skyc compile`` (stacks as files, for review and CI) and ``skyc destroy`` / ``down``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from skyc.cli.options import INFRA_HELP, one_infra
from skyc.cli.output import console

if TYPE_CHECKING:
    from skyc.model.plan import Plan
    from skyc.stacks import ProgressEvent

_COMPILE_HELP = (
    "Compile a task into its placement plan and infrastructure stacks, as files.\n\n"
    "Writes DIR/plan.json and each task's stack as its engine reads it: "
    "DIR/<cluster>/main.tf.json for terraform, DIR/<cluster>/__main__.py and Pulumi.yaml "
    "for pulumi (no CLI needed); each bucket a task creates (file_mounts with a name) is "
    "a stack of its own, DIR/storage-<bucket>/; clusters on AWS share their region's "
    "network, DIR/network-aws-<region>/; nothing else: no keys, no state. A cluster's "
    "stack's inputs (its SSH public key, ssh_public_key; on AWS its network's vpc_id and "
    "subnet_id) are filled in when the stack is applied, so the output is secret-free and "
    "the same task, catalog and config always give byte-identical files."
)


def _plan_json(plan: Plan, stacks: list[dict[str, str]]) -> str:
    """The plan document, as ``skyc plan --format json`` prints it (``skyc schema plan``)."""
    from skyc.apply.plan_document import compiled_plan_json

    return compiled_plan_json(plan, stacks)


def compile_cmd(
    task_file: Path = typer.Argument(..., metavar="TASK",
                                     help="Task YAML (one task or a pipeline)."),
    out: Path = typer.Option(..., "-o", "--output", metavar="DIR",
                             help="Directory to write into."),
    infra_flags: list[str] = typer.Option([], "--infra", metavar="INFRA", help=INFRA_HELP),
    catalog: Path | None = typer.Option(None, "--catalog", metavar="DIR",
                                        help="Catalog dir (<cloud>/vms.csv)."),
    engine: str | None = typer.Option(
        None, "--engine", metavar="terraform|pulumi",
        help="terraform or pulumi (default: the config's, else the "
        "target's first)."),
) -> None:
    from skyc.apply.infra import catalog_for, plan_scope
    from skyc.compiler import NETWORK_INPUT, build_stack, choose_engine
    from skyc.model.cluster_names import cluster_names_for
    from skyc.optimizer import optimize
    from skyc.settings.config import load_config
    from skyc.task import load_tasks

    config = load_config()
    task_set = load_tasks(task_file)
    tasks = list(task_set.tasks)
    infra = one_infra(infra_flags)
    scope = plan_scope(config, tasks, infra=infra, catalog_dir=catalog, fall_back=True)
    cat = catalog_for(config, tasks, infra=infra, catalog_dir=catalog, scope=scope)
    parallel = task_set.header is not None and task_set.header.execution == "parallel"
    from skyc.apply.data_sources import task_data

    plan = optimize(tasks, cat, infra=infra, edges=[] if parallel else None,
                    data=task_data(tasks))
    from skyc.apply.bucket_jobs import compiled_bucket_stacks

    stacks: list[dict[str, str]] = []
    networks: dict[tuple[str, str], tuple[str, list[str | None]]] = {}
    for task, task_plan, cluster in zip(tasks, plan.tasks, cluster_names_for(tasks), strict=True):
        placement = task_plan.placement
        candidate = task.candidates()[placement.candidate_index]
        workspace = out / cluster
        stack = build_stack(cluster, placement, candidate, config=config, workspace=workspace)
        if NETWORK_INPUT in stack.variables and placement.region:  # its region's network
            _, zones = networks.setdefault((placement.cloud, placement.region),
                                           (task_plan.name, []))
            zones += [] if placement.zone in zones else [placement.zone]
        buckets = compiled_bucket_stacks(task, cluster, placement.cloud, placement.region,
                                         config)
        for one in [stack, *buckets]:
            name = choose_engine(one.cloud, engine, config)
            entry = _write_stack(one, name, out / one.name, task_plan.name)
            stacks.append(entry)
            console.print(f"{task_plan.name}: {placement.infra if one is stack else 'bucket'}"
                          f" -> {out / entry['path']} ({name})")
    stacks += _network_stacks(networks, out, engine, config)
    out.mkdir(parents=True, exist_ok=True)
    (out / "plan.json").write_text(_plan_json(plan, stacks))
    console.print(f"wrote {out / 'plan.json'}")


def _network_stacks(networks: dict[tuple[str, str], tuple[str, list[str | None]]], out: Path,
                    engine: str | None, config: Any) -> list[dict[str, str]]:
    """Each region's shared network the clusters use, written beside them; their
    entries in plan.json's ``stacks`` (under the first task placed there)."""
    from skyc.compiler import choose_engine, network_part
    from skyc.model.owner import owner

    entries = []
    for (cloud, region), (task, zones) in sorted(networks.items()):
        part = network_part(cloud)
        if part is None:
            continue
        stack = part.network_stack(region, zones, owner(config), config)
        name = choose_engine(cloud, engine, config)
        entry = _write_stack(stack, name, out / stack.name, task)
        entries.append(entry)
        console.print(f"{task}: network -> {out / entry['path']} ({name})")
    return entries


def _write_stack(stack: Any, engine: str, workspace: Path, task: str) -> dict[str, str]:
    """Write one stack's files; its entry in plan.json's ``stacks``."""
    from skyc.stacks import emit

    files = emit(stack, engine)
    workspace.mkdir(parents=True, exist_ok=True)
    for file_name, text in files.items():
        (workspace / file_name).write_text(text)
    first = next(iter(files))  # the main file: main.tf.json, __main__.py
    entry = {"cluster": stack.name, "task": task, "path": f"{stack.name}/{first}"}
    if engine != "terraform":
        entry["engine"] = engine
    return entry


compile_cmd.__doc__ = _COMPILE_HELP


def _render(event: ProgressEvent, status: Any) -> None:
    if event.kind == "start" and event.address:
        status.update(f"{event.address}: {event.action or 'working'}...")
    elif event.kind == "complete" and event.address:
        console.print(f"  [green]✔[/] {event.address} {event.action or ''}".rstrip())
    elif event.kind == "errored" and event.address:
        console.print(f"  [red]✘[/] {event.address} {event.action or ''}".rstrip())
    elif event.kind == "progress" and event.address:
        status.update(f"{event.address}: still {event.action or 'working'} "
                      f"({event.elapsed_s or 0:.0f}s)")


def _describe(names: list[str]) -> str:
    """Each cluster in words: where it runs and on how many nodes."""
    from skyc.state.database import StateDB

    with StateDB() as db:
        records = {n: db.get_cluster(n) for n in names}
    parts = []
    for name in names:
        rec = records[name]
        if rec is None:
            parts.append(f"'{name}'")
            continue
        where = "/".join(p for p in (rec.cloud, rec.region) if p)
        count = len(rec.nodes)
        nodes = f", {count} node{'s' if count != 1 else ''}" if count else ""
        parts.append(f"'{name}' ({where}{nodes})")
    return ", ".join(parts)


def destroy_cmd(
    names: list[str] = typer.Argument(None, metavar="CLUSTER", help="Cluster name(s)."),
    all_clusters: bool = typer.Option(False, "-a", "--all", help="Every cluster skyc knows."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
    purge: bool = typer.Option(
        False, "--purge", help="Destroy the managed-jobs controller cluster even while it "
        "supervises unfinished jobs or does not answer (their state is lost)."),
) -> None:
    """Destroy clusters: every resource of their stacks, then their workspaces.

    The managed-jobs controller cluster is refused while it supervises unfinished jobs
    (cancel them first with `skyc jobs cancel --all`)."""
    from skyc.errors import ConfigError

    names = list(names or [])
    if all_clusters:
        names = _every_cluster(names)
        if not names:
            console.print("no clusters to destroy", markup=False)
            return
    if not names:
        raise ConfigError("destroy: name the clusters to destroy, or pass -a for every one",
                          hint="see your clusters with: skyc status")
    _check_destroyable(names, purge)
    owners = _check_owners(names, yes)
    if not yes:
        _confirm_destroy(names)
    for name in names:
        _destroy_one(name, owners.get(name))
    from skyc.cli.cmd_apply import refresh_ssh_config

    refresh_ssh_config()


def _every_cluster(names: list[str]) -> list[str]:
    """``-a``: every cluster skyc knows, but a managed job's and another user's (said
    so, and left alone)."""
    from skyc.errors import ConfigError
    from skyc.state.database import StateDB, owned_by

    if names:
        raise ConfigError("destroy: give cluster names or -a, not both")
    from skyc.apply.orphans import orphan_workspaces

    with StateDB() as db:
        known = db.list_clusters()
        me = db.caller()
    names = [c.name for c in known if owned_by(c.owner, me)]
    for other in (c for c in known if not owned_by(c.owner, me)):
        console.print(f"{other.name}: skipped, it belongs to {other.owner}; destroy it "
                      f"by name: skyc down {other.name}", markup=False)
    # Workspaces with a stack but no record (an emptied state): their resources
    # exist all the same, and `-a` means every cluster.
    names += [o.name for o in orphan_workspaces(c.name for c in known)]
    from skyc.apply.launch import skip_managed

    names, skipped = skip_managed(names)
    for note in skipped:
        console.print(note, markup=False)
    return names


def _check_destroyable(names: list[str], purge: bool) -> None:
    """Valid names, and none of the clusters a managed job needs."""
    from skyc.stacks import check_cluster_name

    for name in names:
        check_cluster_name(name)
    from skyc.jobs.remote import check_destroy

    check_destroy(names, purge=purge)  # the managed-jobs controller's cluster
    from skyc.apply.launch import check_not_managed

    for name in names:
        check_not_managed(name)  # a managed job's cluster: `skyc jobs cancel N`


def _check_owners(names: list[str], yes: bool) -> dict[str, str]:
    """Another user's clusters among ``names``, each asked about (or refused without
    --yes where stdin is not a terminal): cluster -> its owner."""
    from skyc.apply.ownership import check_owner
    from skyc.cli.options import terminal_ask
    from skyc.state.database import StateDB

    owners: dict[str, str] = {}
    with StateDB() as db:
        for name in names:
            owner = check_owner(name, "destroy", yes, terminal_ask(), db)
            if owner is not None:
                owners[name] = owner
    return owners


def _confirm_destroy(names: list[str]) -> None:
    """Ask on the terminal, saying what is lost; refused when stdin is not one."""
    from skyc.errors import ConfigError

    if not sys.stdin.isatty():
        raise ConfigError(
            "refusing to destroy without confirmation: stdin is not a terminal",
            hint="pass --yes to destroy without asking",
        )
    plural = "s" if len(names) > 1 else ""
    them = "them" if plural else "it"
    question = (f"Destroy cluster{plural} {_describe(names)}? Every machine, disk and "
                f"network of {them} is deleted, and what is stored there is lost.")
    from skyc.apply.bucket_jobs import buckets_going_with

    going = buckets_going_with(names)
    if going:
        question += (f" The bucket{'s' if len(going) > 1 else ''} {', '.join(going)} "
                     f"(not persistent) {'are' if len(going) > 1 else 'is'} deleted too.")
    if not typer.confirm(question, err=True):
        raise typer.Abort()


def _destroy_one(name: str, owner: str | None = None) -> None:
    """Under the cluster's lock: end its jobs, destroy its stack; then forget it.
    ``owner``: the other user it belonged to (recorded with who destroyed it)."""
    from skyc.apply.ownership import record_override
    from skyc.apply.provision import teardown
    from skyc.cli.cmd_lifecycle import lock_waiter
    from skyc.state.database import StateDB
    from skyc.state.locks import cluster_lock

    with cluster_lock(name, timeout=60, on_wait=lock_waiter(name, 60)), \
            console.status(f"destroying {name}") as status:
        from skyc.apply.launch import end_cluster_jobs

        end_cluster_jobs(name)  # every job process, daemons included, before the nodes
        teardown(name, progress=lambda event: _render(event, status),
                 say=lambda _, text: console.print(f"{name}: {text}"))
    with StateDB() as db:
        db.remove_cluster(name)
        if owner is not None:
            record_override(name, "destroy", owner, db)
        console.print(f"[bold]{name}[/]: destroyed")
        from skyc.apply.buckets import release_cluster_buckets

        with console.status(f"{name}: its buckets") as status:
            release_cluster_buckets(name, db, lambda _, text: console.print(f"{name}: {text}"),
                                    lambda event: _render(event, status))


def register(app: typer.Typer) -> None:
    app.command("compile", help=_COMPILE_HELP)(compile_cmd)
    app.command("destroy")(destroy_cmd)
    app.command("down", help="Alias of destroy.")(destroy_cmd)
