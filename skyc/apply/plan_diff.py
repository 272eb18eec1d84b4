"""Plan with the engine's diff: ``skyc plan`` as a library function.

:func:`plan_with_diff` reads the task files, places every task (within the policy
that applies), says what apply would refuse and what is left out of the plan, then
runs each cluster's engine to diff its stack against what exists (changing nothing:
a cluster never applied is diffed in a temporary folder), checks the plan against the
policy and, when asked, saves the plan file ``skyc apply FILE`` applies. It prints
nothing: what it says as it goes is passed to a :class:`PlanProgress`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skyc.apply.bucket_notes import BucketNote
    from skyc.apply.infra import PlanScope
    from skyc.apply.plan_policy import PolicyResult
    from skyc.apply.service_cost import ServiceCost
    from skyc.apply.stack_diffs import StackEntry
    from skyc.catalog import Catalog
    from skyc.model.plan import Plan
    from skyc.optimizer.pipeline_cost import RunCost
    from skyc.review.planfile import Artifacts
    from skyc.settings.config import SkycConfig
    from skyc.task import Task


@dataclass
class PlanDiffOptions:
    """How to plan (``skyc plan``'s options)."""

    infra: str | None = None  # --infra: plan on this infra only
    catalog_dir: Path | None = None  # --catalog
    optimize: str = "cost"  # or "time"
    cluster: str | None = None  # -c: the cluster to diff against (one task only)
    diff: bool = True  # False: the placement only, no engine runs
    engine: str | None = None  # terraform or pulumi; None: the config's, else the target's
    out: Path | None = None  # -o: save the plan file here
    policy_file: Path | None = None  # None: the task's directory's, else the config's
    detailed_exitcode: bool = False  # exit_code as ``terraform plan -detailed-exitcode``'s
    hours: float | None = None  # --hours: what every cluster costs for that long
    env: dict[str, str] = field(default_factory=dict)  # --env values
    secrets: dict[str, str | None] = field(default_factory=dict)  # None: from the environment
    overrides: dict[str, Any] = field(default_factory=dict)  # resource overrides (--gpus ...)


@dataclass
class PlacedPlan:
    """The plan before any engine runs: where each task goes, and what is said beside it."""

    options: PlanDiffOptions
    tasks: list[Task]
    files: list[Path]  # the task files named (a directory's files in its place)
    files_of: list[Path]  # each task's file
    clusters: list[str]  # each task's cluster
    parallel: bool  # independent tasks (several files, or a parallel header)
    config: SkycConfig
    scope: PlanScope
    catalog: Catalog
    plan: Plan
    run_cost: RunCost
    # One line each: plan-only and skipped clouds, offers the policy excluded, what
    # apply would refuse, a cheaper disabled cloud, the --hours total.
    notes: list[str]
    refusals: list[str]  # what apply would refuse of this plan (also in ``notes``)
    cheaper: dict[str, Any] | None  # a disabled cloud that would be cheaper
    # Each service task's replicas and their cost range (also a line in ``notes``).
    services: list[ServiceCost] = field(default_factory=list)
    # Each task's buckets: created, used again or read (also a line each in ``notes``).
    buckets: list[BucketNote] = field(default_factory=list)


@dataclass
class PlanResult:
    """The plan, each stack's engine diff, the policy's verdict and the exit code."""

    placed: PlacedPlan
    # One entry per cluster (:func:`skyc.apply.stack_diffs.stack_entry`): its
    # ``resource_changes`` with terraform-style ``actions``, ``summary``, ``status``
    # (``ok``, or ``unavailable`` with a ``note``); None when not diffed.
    stacks: list[StackEntry] | None
    policy: PolicyResult | None  # ``file``, ``ok``, ``violations``; None: no policy applies
    exit_code: int  # 1 on a policy violation; see PlanDiffOptions.detailed_exitcode
    # Clusters whose change is not known (their diff could not be computed): exit 1
    # with detailed_exitcode.
    unknown: list[str] = field(default_factory=list)
    saved: Path | None = None  # the plan file written

    @property
    def plan(self) -> Plan:
        return self.placed.plan

    @property
    def clusters(self) -> list[str]:
        return self.placed.clusters

    def document(self) -> dict[str, Any]:
        """``skyc plan --format json``'s document (``skyc schema plan``)."""
        from skyc.apply.plan_document import add_review, plan_document

        placed = self.placed
        scope = placed.scope
        notes = {k: v for k, v in (("plan_only", list(scope.plan_only)),
                                   ("skipped", list(scope.skipped)),
                                   ("cheaper_elsewhere", placed.cheaper),
                                   ("apply_refusals", placed.refusals),
                                   ("services", [c.document() for c in placed.services]),
                                   ("buckets", [b.document() for b in placed.buckets]))
                 if v}
        doc = plan_document(placed.plan, self.stacks, notes, placed.run_cost)
        return add_review(doc, placed.clusters, placed.options.hours, self.policy)

    def markdown(self) -> str:
        """``skyc plan --format markdown``: the review comment."""
        from skyc.apply.plan_document import review_markdown

        placed = self.placed
        return review_markdown(self.document(), tasks=placed.tasks, plan=placed.plan,
                               names=placed.clusters, stacks=self.stacks,
                               config=placed.config, engine=placed.options.engine,
                               out=placed.options.out)


class PlanProgress:
    """What :func:`plan_with_diff` says as it goes; each method here does nothing."""

    def warning(self, text: str) -> None:
        """A task file's warning, as the file is read."""

    def placed(self, placed: PlacedPlan) -> None:
        """The plan and its notes, before the policy's verdict and any engine run."""

    def diff_started(self, clusters: list[str]) -> None:
        """The engine diffs begin (an engine plan takes tens of seconds)."""

    def stack(self, cluster: str, engine: str) -> None:
        """``engine`` starts to diff ``cluster``'s stack."""

    def diff_done(self, stacks: list[StackEntry]) -> None:
        """Every stack's diff is computed (or its note says why not)."""


def plan_with_diff(task_files: str | Path | Sequence[str | Path],
                   options: PlanDiffOptions | None = None,
                   progress: PlanProgress | None = None) -> PlanResult:
    """Plan the tasks of ``task_files`` (one path, or several: they make one plan of
    independent tasks; a directory stands for its task files) and diff each cluster's
    stack with its engine.

    Raises a :class:`skyc.errors.SkycError` when the tasks cannot be read or placed, or
    the policy file cannot be read; a stack whose diff cannot be computed has a note
    instead. With ``options.out``, the plan file is written (``skyc apply FILE``).
    """
    from skyc.apply.plan_policy import check_policy

    opts = options if options is not None else PlanDiffOptions()
    say = progress if progress is not None else PlanProgress()
    paths = [task_files] if isinstance(task_files, str | Path) else list(task_files)
    placed = place_tasks([Path(f) for f in paths], opts, say)
    say.placed(placed)
    # Before the engine diff: a policy file that cannot be read fails fast.
    policy = check_policy(opts.policy_file, placed.files[0], placed.tasks, placed.plan,
                          placed.clusters, placed.config)
    artifacts = None
    if opts.diff or opts.out is not None:  # the engine plans, for a saved plan
        from skyc.review.planfile import Artifacts

        artifacts = Artifacts()
    stacks = _diff(placed, say, artifacts) if opts.diff else None
    if opts.out is not None:
        assert artifacts is not None
        save_plan(opts.out, placed, stacks or [], artifacts)
    code, unknown = plan_exit_code(policy, stacks, opts.detailed_exitcode, placed.plan,
                                   placed.clusters)
    return PlanResult(placed, stacks, policy, code, unknown, opts.out)


def _diff(placed: PlacedPlan, say: PlanProgress, artifacts: Artifacts | None
          ) -> list[StackEntry]:
    from skyc.apply.stack_diffs import plan_stacks

    opts = placed.options
    say.diff_started(placed.clusters)
    stacks = plan_stacks(placed.tasks, placed.plan, placed.clusters,
                         catalog=opts.catalog_dir, target=opts.optimize,
                         config=placed.config, engine=opts.engine, on_stack=say.stack,
                         on_plan=artifacts)
    say.diff_done(stacks)
    return stacks


def expand_task_files(paths: Sequence[Path]) -> list[Path]:
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


def _load(paths: Sequence[Path], opts: PlanDiffOptions, say: PlanProgress
          ) -> tuple[list[Task], list[Path], list[Path], bool]:
    """Every task file's tasks (their warnings said), the files named, each task's file
    and whether the tasks are independent; --cluster needs exactly one task."""
    from skyc.errors import ConfigError
    from skyc.task import load_tasks

    if opts.cluster is not None and not opts.diff:
        raise ConfigError("--cluster names the cluster to diff against; it has no use "
                          "with --no-diff", hint="drop one of them")
    files = expand_task_files(paths)
    tasks: list[Task] = []
    files_of: list[Path] = []
    parallel = len(files) > 1  # tasks of several files are independent
    for path in files:
        task_set = load_tasks(path, env=opts.env, secrets=opts.secrets,
                              overrides=opts.overrides)
        for warning in task_set.warnings:
            say.warning(warning.render())
        tasks += list(task_set.tasks)
        files_of += [path] * len(task_set.tasks)
        parallel = parallel or (task_set.header is not None
                                and task_set.header.execution == "parallel")
    if opts.cluster is not None and len(tasks) != 1:
        raise ConfigError(
            f"--cluster names one cluster, but {files[0]} holds {len(tasks)} tasks",
            hint="drop --cluster: each task's cluster is named after the task",
        )
    return tasks, files, files_of, parallel


def place_tasks(paths: Sequence[Path], opts: PlanDiffOptions,
                say: PlanProgress | None = None) -> PlacedPlan:
    """The tasks of ``paths`` placed by the optimizer over the infra in scope, within
    the policy's constraint, with what is said beside the plan; no engine runs."""
    from skyc.apply.data_sources import task_data
    from skyc.apply.infra import catalog_for, plan_scope
    from skyc.apply.plan_policy import policy_constraint
    from skyc.optimizer import optimize as run_optimizer
    from skyc.optimizer.durations import task_duration
    from skyc.optimizer.pipeline_cost import run_cost
    from skyc.settings.config import load_config

    tasks, files, files_of, parallel = _load(paths, opts, say or PlanProgress())
    names: list[str] = []
    if opts.diff:
        from skyc.model.cluster_names import cluster_names_for

        names = cluster_names_for(tasks, opts.cluster)
    config = load_config()
    scope = plan_scope(config, tasks, infra=opts.infra, catalog_dir=opts.catalog_dir,
                       fall_back=True)
    cat = catalog_for(config, tasks, infra=opts.infra, catalog_dir=opts.catalog_dir,
                      scope=scope)
    excluded: list[str] = []
    plan = run_optimizer(tasks, cat, target="time" if opts.optimize == "time" else "cost",
                         infra=opts.infra, edges=[] if parallel else None,
                         allowed=policy_constraint(opts.policy_file, files[0], config),
                         report=lambda task, note: excluded.append(f"{task}: {note}"),
                         data=task_data(tasks))
    _check_node_limits(plan)
    run = run_cost(plan, [task_duration(t) for t in tasks],
                   "parallel" if parallel else "serial")
    placed = PlacedPlan(opts, tasks, files, files_of, names, parallel, config, scope, cat,
                        plan, run, [], [], None)
    _add_notes(placed, excluded)
    return placed


def _check_node_limits(plan: Plan) -> None:
    """Refuse a plan whose num_nodes is more than its target supports."""
    from skyc.apply.preflight import node_limit_problem
    from skyc.errors import Refused

    for tp in plan.tasks:
        problem = node_limit_problem(tp.placement.cloud, tp.placement.num_nodes)
        if problem is not None:
            raise Refused(f"task '{tp.name}' on {tp.placement.infra}", [problem])


def _add_notes(placed: PlacedPlan, excluded: list[str]) -> None:
    """Each task's cluster, what apply would refuse, a cheaper disabled cloud and the
    notes' lines, into ``placed``."""
    from skyc.apply.preflight import apply_refusals
    from skyc.apply.scope_notes import cheaper_elsewhere, cheaper_line, scope_lines
    from skyc.apply.service_cost import service_costs
    from skyc.model.cluster_names import cluster_names_for

    opts, plan = placed.options, placed.plan
    lines = scope_lines(placed.scope) + [f"policy: {note}" for note in excluded]
    placed.clusters = placed.clusters or cluster_names_for(placed.tasks, opts.cluster)
    placed.refusals = apply_refusals(placed.tasks, plan, placed.clusters)
    lines += placed.refusals
    placed.services = service_costs(placed.tasks, plan, placed.catalog)
    lines += [cost.line() for cost in placed.services]
    if any(t.file_mounts for t in placed.tasks):
        from skyc.apply.bucket_notes import bucket_notes

        placed.buckets = bucket_notes(placed.tasks, [t.placement.cloud for t in plan.tasks],
                                      placed.clusters, placed.config,
                                      [t.placement.region for t in plan.tasks])
        lines += [note.line() for note in placed.buckets]
    placed.cheaper = cheaper_elsewhere(placed.tasks, plan, placed.scope, placed.config,
                                       infra=opts.infra, catalog_dir=opts.catalog_dir,
                                       target=opts.optimize, parallel=placed.parallel)
    if placed.cheaper:
        lines.append(cheaper_line(placed.cheaper, plan))
    if opts.hours is not None:
        lines.append(_hours_line(plan, opts.hours))
    placed.notes = lines


def _hours_line(plan: Plan, hours: float) -> str:
    """What ``--hours N`` adds to the table: every cluster for N hours, at the planned
    prices (as the JSON's ``run_total``)."""
    from skyc.optimizer.pipeline_cost import hours_text

    total = sum(t.placement.hourly_cost for t in plan.tasks) * hours
    each = " (each cluster for that long)" if len(plan.tasks) > 1 else ""
    return f"for {hours_text(hours)}: ${total:,.2f} at the planned prices{each}"


def save_plan(out: Path, placed: PlacedPlan, stacks: list[StackEntry],
              artifacts: Artifacts) -> None:
    """Write the plan file ``skyc apply FILE`` applies (``skyc plan -o FILE``)."""
    from skyc.review.planfile import PlanOptions, build, write

    opts = placed.options
    catalog = opts.catalog_dir
    options = PlanOptions(
        infra=opts.infra, catalog_dir=str(catalog.resolve()) if catalog else None,
        optimize=opts.optimize, engine=opts.engine, cluster=opts.cluster, env=opts.env,
        overrides=opts.overrides)
    saved = build(task_files=placed.files_of, tasks=placed.tasks, names=placed.clusters,
                  plan=placed.plan, stacks=stacks, artifacts=artifacts, config=placed.config,
                  options=options)
    write(out, saved)


def plan_exit_code(policy: PolicyResult | None, stacks: list[StackEntry] | None,
                   detailed: bool, plan: Plan | None = None,
                   clusters: list[str] | None = None) -> tuple[int, list[str]]:
    """1 with a policy violation. With ``detailed``, as ``terraform plan
    -detailed-exitcode``'s: 0 only when skyc knows nothing changes, 2 when something
    does (a stack's diff has changes, a cluster that does not exist yet is created, a
    recorded cluster's placement changes), 1 when an existing cluster's diff could not
    be computed; with the notes of those clusters (why it is not known)."""
    if policy is not None and not policy["ok"]:
        return 1, []
    if not detailed:
        return 0, []
    from skyc.apply.stack_diffs import placement_moved

    diffs = {st["cluster"]: st for st in stacks or []}
    changed, unknown = False, []
    for index, cluster in enumerate(clusters or list(diffs)):
        st = diffs.get(cluster)
        if st is not None and st["status"] == "ok":
            changed = changed or bool(st["has_changes"])
            continue
        moved = placement_moved(cluster, plan.tasks[index].placement if plan else None)
        if moved is None or moved:  # a new cluster, or one that moves: a change
            changed = True
            continue
        unknown.append(st["note"] if st is not None and st.get("note")
                       else f"no diff for stack {cluster}: --no-diff skips the engine")
    if unknown:
        return 1, unknown
    return (2 if changed else 0), []
