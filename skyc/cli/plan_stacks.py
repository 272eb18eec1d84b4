"""``skyc plan``'s per-cluster stacks: each cluster's engine diff against its current
state, as ``--format json``'s ``stacks`` entries, and printed as a table's sequel."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skyc.cli.output import json_errors as json_errors  # where cmd_plan finds it
from skyc.schemas import versions

if TYPE_CHECKING:
    from skyc.errors import SkycError
    from skyc.model.plan import Placement, Plan
    from skyc.review.planfile import Artifacts
    from skyc.settings.config import SkycConfig
    from skyc.stacks.engine import StackDiff
    from skyc.state.database import ClusterRecord
    from skyc.task import Task
    from skyc.task.candidate import ResourceCandidate

# A ResourceChange's action as terraform's `actions` list. A replacement is reported
# in terraform's default order (delete, then create); the engine's diff does not say
# whether a resource is created before the old one is destroyed.
_ACTIONS: dict[str, list[str]] = {"replace": ["delete", "create"]}


def stack_entry(
    cluster: str, task: str, engine: str, diff: StackDiff | None, note: str | None = None
) -> dict[str, Any]:
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
) -> list[dict[str, Any]]:
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
    from skyc.compiler import choose_engine
    from skyc.errors import SkycError
    from skyc.settings.infra import missing_credentials

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
        except SkycError as exc:
            reason = _reason(exc)
            stacks.append(stack_entry(cluster, task_plan.name, name, None,
                                      f"no diff for stack {cluster}: {reason}"))
            continue
        stacks.append(stack_entry(cluster, task_plan.name, name, diff, note))
    return stacks


OnPlan = Callable[[str, Path, "StackDiff"], None]


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
        diff = plan_changes(cluster, placement, candidate, config=config, engine=engine,
                            workspace=workspace)
        if on_plan is not None:
            on_plan(cluster, workspace, diff)
        return diff.model_copy(update={"plan_file": None})


def _short(value: Any, width: int = 90) -> str:
    """An input value on one line, cut to ``width`` characters."""
    import json

    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= width else text[: width - 3] + "..."


_SIGNS = {"create": "+", "delete": "-", "update": "~", "replace": "-/+", "read": "<="}


def print_stacks(stacks: list[dict[str, Any]]) -> None:
    from skyc.cli.output import print_line, print_warning

    for st in stacks:
        if st["status"] != "ok":
            print_warning(f"{st['note']}; `skyc plan --no-diff` shows the placement only")
            continue
        parts = [f"{n} to {a}" for a, n in st["summary"].items() if a not in ("no-op", "read")]
        if not parts:
            parts.append("no changes")
        if st["summary"].get("no-op"):
            parts.append(f"{st['summary']['no-op']} unchanged")
        preview = ", offline preview" if st["preview"] == "offline" else ""
        print_line(f"stack {st['cluster']} ({st['engine']}{preview}): {', '.join(parts)}")
        for rc in st["resource_changes"]:
            action = "replace" if rc["actions"] == ["delete", "create"] else rc["actions"][0]
            if action == "no-op":
                continue
            if "inputs" not in rc:
                print_line(f"  {_SIGNS.get(action, action):>3} {rc['address']}")
                continue
            name = rc["address"].rsplit("::", 1)[-1]
            print_line(f"  {_SIGNS.get(action, action):>3} {name} ({rc['type']})")
            for key, value in sorted(rc["inputs"].items()):
                print_line(f"        {key} = {_short(value)}")
        if st["note"]:
            print_line(f"  note: {st['note']}")


def save_plan(
    out: Path, task_files: list[Path], tasks: list[Task], names: list[str], plan: Plan,
    stacks: list[dict[str, Any]], artifacts: Artifacts, config: SkycConfig, *,
    infra: str | None, catalog: Path | None, optimize: str, engine: str | None,
    cluster: str | None, env: dict[str, str], overrides: dict[str, Any],
) -> None:
    """``skyc plan -o FILE``: write the saved plan file, and say where it is."""
    from skyc.cli.output import print_line
    from skyc.review.planfile import PlanOptions, build, write

    options = PlanOptions(
        infra=infra, catalog_dir=str(catalog.resolve()) if catalog else None,
        optimize=optimize, engine=engine, cluster=cluster, env=env, overrides=overrides)
    saved = build(task_files=task_files, tasks=tasks, names=names, plan=plan, stacks=stacks,
                  artifacts=artifacts, config=config, options=options)
    write(out, saved)
    again = f"skyc apply {shlex.quote(str(out))}"
    print_line(f"plan saved to {out}: apply exactly this plan with `{again}` "
               "(it holds no secret values; its engine plans may hold other sensitive "
               "values of the stacks: keep it as you keep their state)", err=True)


def policy_constraint(explicit: Path | None, task_file: Path, config: SkycConfig
                      ) -> Callable[[Placement], str | None] | None:
    """The policy that applies to ``task_file`` as a constraint of the optimizer (None
    when no policy applies): it places on what the policy allows."""
    from skyc.review.policy_file import find_policy

    path = find_policy(explicit, task_file, config.policy)
    if path is None:
        return None
    from skyc.review.policy import load_policy, placement_allowed

    return placement_allowed(load_policy(path))


def check_policy(
    explicit: Path | None, task_file: Path, tasks: list[Task], plan: Plan, names: list[str],
    config: SkycConfig,
) -> dict[str, Any] | None:
    """The policy's verdict on the plan (``--format json``'s ``policy``): its file and
    its violations; None when no policy applies."""
    import os

    from skyc.review.policy_file import find_policy

    path = find_policy(explicit, task_file, config.policy)
    if path is None:
        return None
    from skyc.review.policy import Planned, evaluate, load_policy
    from skyc.review.quotas import current_user, usage_from_state

    policy = load_policy(path)
    planned = [Planned(cluster=c, placement=tp.placement,
                       labels=t.candidates()[tp.placement.candidate_index].labels)
               for t, tp, c in zip(tasks, plan.tasks, names, strict=True)]
    labels = {k: v for p in planned for k, v in p.labels.items()}
    violations = evaluate(policy, planned, usage_from_state(),
                          current_user(labels, dict(os.environ)), at_once=plan.peak_tasks,
                          gpus_at_once=plan.peak_accelerator_tasks)
    return {"file": str(path), "ok": not violations,
            "violations": [v.model_dump(mode="json") for v in violations]}


def print_policy(result: dict[str, Any] | None) -> None:
    from skyc.cli.output import print_line

    if result is None:
        return
    if result["ok"]:
        print_line(f"policy {result['file']}: passed")
        return
    print_line(f"policy {result['file']}: {len(result['violations'])} violation(s)")
    for v in result["violations"]:
        where = f"cluster {v['cluster']}: " if v["cluster"] else ""
        print_line(f"  {v['rule']}: {where}{v['message']}")


# ``skyc plan --format json``'s version (its history: :mod:`skyc.schemas.versions`).
PLAN_JSON_VERSION = versions.PLAN


def review_outputs(
    doc: dict[str, Any], *, fmt: str, tasks: list[Task], plan: Plan, names: list[str],
    stacks: list[dict[str, Any]] | None, policy: dict[str, Any] | None, config: SkycConfig,
    engine: str | None, hours: float | None, out: Path | None,
) -> str | None:
    """Add ``cost`` and ``policy`` to the JSON document; the markdown comment when
    ``fmt`` is markdown (None otherwise)."""
    from skyc.review.report import cost_section

    doc["format_version"] = PLAN_JSON_VERSION
    doc["cost"] = cost_section(doc, names, hours)
    doc["policy"] = policy
    if fmt != "markdown":
        return None
    from skyc.compiler import choose_engine
    from skyc.review.markdown import render
    from skyc.review.planfile import stack_files

    files = {}
    for task, tp, cluster in zip(tasks, plan.tasks, names, strict=True):
        name = choose_engine(tp.placement.cloud, engine, config)
        files[cluster] = stack_files(cluster, tp.placement, task, config, name)
    steps = ([f"skyc apply {shlex.quote(str(out))}"] if out is not None
             else ["skyc plan TASK -o plan.skyc", "skyc apply plan.skyc"])
    return render(doc, stacks or [], doc["cost"], policy, files, steps)


def plan_exit_code(policy: dict[str, Any] | None, stacks: list[dict[str, Any]] | None,
                   detailed: bool, plan: Plan | None = None,
                   clusters: list[str] | None = None) -> int:
    """1 with a policy violation. With ``--detailed-exitcode``, as ``terraform plan``'s:
    0 only when skyc knows nothing changes, 2 when something does (a stack's diff has
    changes, a cluster that does not exist yet is created, a recorded cluster's
    placement changes), 1 when an existing cluster's diff could not be computed (its
    reason printed)."""
    if policy is not None and not policy["ok"]:
        return 1
    if not detailed:
        return 0
    from skyc.cli.output import print_warning

    diffs = {st["cluster"]: st for st in stacks or []}
    changed, unknown = False, []
    for index, cluster in enumerate(clusters or list(diffs)):
        st = diffs.get(cluster)
        if st is not None and st["status"] == "ok":
            changed = changed or bool(st["has_changes"])
            continue
        moved = _placement_moved(cluster, plan.tasks[index].placement if plan else None)
        if moved is None or moved:  # a new cluster, or one that moves: a change
            changed = True
            continue
        unknown.append(st["note"] if st is not None and st.get("note")
                       else f"no diff for stack {cluster}: --no-diff skips the engine")
    if unknown:
        for note in unknown:
            print_warning(f"{note}: whether it changes is not known (exit 1)")
        return 1
    return 2 if changed else 0


def _placement_moved(cluster: str, placement: Placement | None) -> bool | None:
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


def compiled_plan_json(plan: Plan, stacks: list[dict[str, str]]) -> str:
    """``skyc compile``'s DIR/plan.json: the plan document of ``skyc plan --format json``
    (the same placements, priced in the same units and precision, the same
    format_version), its ``stacks`` the files compile wrote (``skyc schema plan``)."""
    import json

    from skyc.cli.cmd_plan import plan_document

    doc = plan_document(plan, stacks)
    doc["format_version"] = PLAN_JSON_VERSION
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def expand_task_files(paths: list[Path]) -> list[Path]:
    """The task files named: a directory stands for its ``*.yaml`` / ``*.yml`` files
    (sorted; ``skyc-policy.yaml`` is not a task)."""
    from skyc.errors import ConfigError
    from skyc.review.policy_file import POLICY_FILE

    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml")
                           and p.name != POLICY_FILE and p.is_file())
            if not found:
                raise ConfigError(f"{path}: a directory with no task files (*.yaml, *.yml)",
                                  hint="name task files, or a directory that holds some")
            out += found
        else:
            out.append(path)
    return out
