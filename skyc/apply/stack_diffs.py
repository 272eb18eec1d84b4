"""Each cluster's engine diff against what exists: ``skyc plan``'s ``stacks`` entries
(:func:`plan_stacks`), computed as ``skyc apply`` would plan each stack, changing
nothing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skyc.errors import SkycError
    from skyc.model.plan import Placement, Plan
    from skyc.settings.config import SkycConfig
    from skyc.stacks.engine import StackDiff
    from skyc.state.database import ClusterRecord, StateDB
    from skyc.task import Task
    from skyc.task.candidate import ResourceCandidate

# One stack of ``skyc plan --format json``'s ``stacks`` list (see :func:`stack_entry`).
StackEntry = dict[str, Any]
# ``on_plan(cluster, workspace, diff)``: a stack's diff, while its workspace exists.
OnPlan = Callable[[str, Path, "StackDiff"], None]

# A ResourceChange's action as terraform's `actions` list. A replacement is reported
# in terraform's default order (delete, then create); the engine's diff does not say
# whether a resource is created before the old one is destroyed.
_ACTIONS: dict[str, list[str]] = {"replace": ["delete", "create"]}


def stack_entry(
    cluster: str, task: str, engine: str, diff: StackDiff | None, note: str | None = None
) -> StackEntry:
    """One stack of ``--format json``'s ``stacks`` list.

    ``resource_changes`` lists every resource of the stack as terraform does (``actions``
    ``["no-op"]`` for one that stays as it is); an offline preview (``preview``
    ``offline``: computed without the engine, reading nothing from the cloud) adds
    each resource's ``inputs``. ``summary`` counts them per action; ``status`` is
    ``ok`` (the diff was computed) or ``unavailable`` (``note`` says why).
    """
    changes = [] if diff is None else [
        {"address": c.address, "type": c.type, "actions": _ACTIONS.get(c.action, [c.action]),
         **({"inputs": c.inputs} if c.inputs is not None else {})}
        for c in diff.changes
    ]
    return {
        "cluster": cluster,
        "task": task,
        "engine": engine,
        "preview": None if diff is None else ("offline" if diff.offline else "engine"),
        "status": "ok" if diff is not None else "unavailable",
        "has_changes": None if diff is None else diff.has_changes,
        "summary": {} if diff is None else diff.summary(),
        "resource_changes": changes,
        "note": note,
    }


def _why_not(engine: str) -> str | None:
    """Why the engine cannot compute a diff here (None when it can)."""
    from skyc.stacks.registry import engine_module

    return engine_module(engine).unavailable()


def _previews_offline(engine: str) -> bool:
    """Whether the engine's diff reads no cloud (an offline preview: no credentials)."""
    from skyc.stacks.registry import engine_module

    return engine_module(engine).previews_offline()


def state_record(cluster: str) -> ClusterRecord | None:
    """The state's record of ``cluster``; None when there is none (and no state at all:
    plan creates no database)."""
    from skyc.state.database import existing_state

    state = existing_state()
    if state is None:
        return None
    with state as db:
        return db.get_cluster(cluster)


def diff_placement(
    task: Task, placement: Placement, cluster: str, catalog: Path | None, target: str,
    config: SkycConfig,
) -> tuple[Placement, str | None]:
    """The placement ``skyc apply`` would use: a cluster that has been up stays in place."""
    record = state_record(cluster)
    if record is None:
        return placement, None
    from skyc.apply.launch import LaunchOptions, cluster_home, make_plan

    home = cluster_home(record)
    if home is None or home == placement.infra:
        return placement, None
    opts = LaunchOptions(infra=home, catalog_dir=catalog, target=target)
    pinned = make_plan([task], opts, config=config).tasks[0].placement
    return pinned, (f"cluster {cluster} lives in {home}: the diff is for {pinned.infra} "
                    f"{pinned.instance_type or ''}, where `skyc apply` keeps it "
                    "(`skyc apply --any-region` moves it)").replace("  ", " ")


def _reason(exc: SkycError) -> str:
    """One line for a failed diff: the error's first line, the engine's first
    ``Error:`` line, and what to do (provider installs get a named fix)."""
    lines = [line.strip("│╷╵ ").strip() for line in str(exc).splitlines()]
    text = lines[0].rstrip(":")
    detail = next((line for line in lines[1:] if line.startswith("Error:")), None)
    if detail:
        text += f": {detail}"
    if detail and "provider" in detail.lower():
        text += ("; the engine could not install the stack's providers: allow access to "
                 "their registry, or set SKYC_TF_PLUGIN_DIR to a local provider mirror")
    return f"{text} ({exc.hint})" if exc.hint else text


def plan_stacks(
    tasks: list[Task], plan: Plan, names: list[str], *, catalog: Path | None, target: str,
    config: SkycConfig, engine: str | None = None,
    on_stack: Callable[[str, str], None] | None = None,
    on_plan: OnPlan | None = None,
) -> list[StackEntry]:
    """Each cluster's engine diff; a stack whose diff cannot be computed gets a note.
    ``on_stack(cluster, engine)`` is called as each engine run starts (progress);
    ``on_plan(cluster, workspace, diff)`` once its diff is computed, while the
    workspace it ran in still exists (a saved plan file keeps its files).

    A cluster never applied (its workspace holds no stack) is diffed in a temporary
    folder, with a throwaway SSH key: ``plan`` writes nothing into ``$SKYC_HOME``
    for it (no workspace, no key, no lock file).

    The engine does not run for a stack whose cloud has no credentials here (skyc's
    own check): it would only probe for them (instance metadata, the provider
    registry) and fail; the placement is still shown.
    """
    from skyc.apply.infra import missing_credentials
    from skyc.compiler import choose_engine
    from skyc.errors import SkycError

    stacks = []
    for task, task_plan, cluster in zip(tasks, plan.tasks, names, strict=True):
        name = choose_engine(task_plan.placement.cloud, engine, config)
        missing = _why_not(name) or (None if _previews_offline(name) else missing_credentials(
            task_plan.placement.cloud, config=config))
        if missing is not None:
            # Nothing is written into the workspace when the engine is not run.
            stacks.append(stack_entry(cluster, task_plan.name, name, None,
                                      f"no diff for stack {cluster}: {missing}"))
            continue
        note = None
        try:
            placement, note = diff_placement(task, task_plan.placement, cluster, catalog,
                                              target, config)
            candidate = task.candidates()[placement.candidate_index]
            if on_stack is not None:
                on_stack(cluster, name)
            diff = _diff_one(cluster, placement, candidate, config, name, on_plan)
            from skyc.apply.networks import network_note

            more = network_note(cluster, placement)
            note = "; ".join(n for n in (note, more) if n) or None
        except SkycError as exc:
            reason = _reason(exc)
            stacks.append(stack_entry(cluster, task_plan.name, name, None,
                                      f"no diff for stack {cluster}: {reason}"))
            continue
        stacks.append(stack_entry(cluster, task_plan.name, name, diff, note))
    return stacks


def _diff_one(
    cluster: str, placement: Placement, candidate: ResourceCandidate, config: SkycConfig,
    engine: str, on_plan: OnPlan | None,
) -> StackDiff:
    import tempfile

    from skyc.apply.provision import plan_changes
    from skyc.stacks.workspace import cluster_workspace, has_stack
    from skyc.state.locks import cluster_lock

    home = cluster_workspace(cluster)
    if has_stack(home):
        with cluster_lock(cluster, timeout=0):
            diff = plan_changes(cluster, placement, candidate, config=config, engine=engine)
            if on_plan is not None:
                on_plan(cluster, home, diff)
            return diff
    with tempfile.TemporaryDirectory(prefix="skyc-plan-") as tmp:
        workspace = Path(tmp) / cluster
        _as_recorded(cluster, workspace, placement)
        diff = plan_changes(cluster, placement, candidate, config=config, engine=engine,
                            workspace=workspace)
        if on_plan is not None:
            on_plan(cluster, workspace, diff)
        return diff.model_copy(update={"plan_file": None})


def _as_recorded(cluster: str, workspace: Path, placement: Placement) -> None:
    """A throwaway workspace for a cluster this machine has no workspace of (a new one,
    or a teammate's seen from CI): its owner (whose hash names its cloud resources), its
    public key and its network (own, or the shared one's ids), as recorded, so its stack
    is built as it was."""
    from skyc.apply.networks import seed_inputs
    from skyc.state.database import existing_state

    state = existing_state()  # plan creates no database
    if state is None:
        return
    with state as db:
        record = db.get_cluster(cluster)
        if record is not None:
            _seed_cluster(record, workspace, placement, db)
        seed_inputs(cluster, placement, workspace, db)


def _seed_cluster(record: ClusterRecord, workspace: Path, placement: Placement,
                  db: StateDB) -> None:
    from skyc.compiler import has_shared_network
    from skyc.compiler.keys import seed_public_key
    from skyc.model.workspace import record_network_mode, record_owner
    from skyc.state.networks import networks_of

    if record.owner:
        record_owner(workspace, record.owner)
    if record.ssh_public_key:
        seed_public_key(workspace, record.ssh_public_key)
    if (record.launched_at is not None and has_shared_network(placement.cloud)
            and record.cloud == placement.cloud and not networks_of(db, record.name)):
        record_network_mode(workspace, shared=False)  # made before networks were shared


def placement_moved(cluster: str, placement: Placement | None) -> bool | None:
    """None for a cluster skyc has no record of (it would be created); else whether the
    plan's placement differs from the recorded one in what makes a new node."""
    record = state_record(cluster)
    if record is None:
        return None
    if placement is None:
        return False
    was = record.placement
    now = placement.model_dump(mode="json")
    keys = ("cloud", "instance_type", "num_nodes", "use_spot", "accelerators")
    return any(was.get(k) != now.get(k) for k in keys if k in was)
