"""The stage order of ``skyc apply``: optimize, provision with failover, sync, setup, run, down.

Each stage is a call into its own package; this module only sequences them,
records what happened in the state database and reports progress through a
``LaunchReporter`` (the CLI renders it; tests can collect it).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from skyc.apply.failover import Attempt, FailoverPolicy, provision_with_failover
from skyc.apply.preflight import (
    check_cluster_reuse,
    check_placement,
    check_reshape,
    check_task,
    end_removed_jobs,
    plan_reshape,
    removed_resources,
)
from skyc.errors import (
    InfeasibleError,
    Interrupted,
    SkycError,
    UnsupportedFeature,
)
from skyc.model.cluster_names import cluster_name_for
from skyc.model.plan import Placement, Plan
from skyc.optimizer.blocked import Blocked
from skyc.settings.config import SkycConfig, load_config
from skyc.state.cluster_jobs import JobRecorder, interrupted

if TYPE_CHECKING:
    from skyc.model.managed_jobs import ManagedJob
    from skyc.model.nodes import ClusterInfo
    from skyc.runtime import JobSpec
    from skyc.runtime.autostop import AutostopPlan
    from skyc.stacks.engine import StackDiff
    from skyc.state.database import ClusterRecord, StateDB
    from skyc.task import Task
    from skyc.task.candidate import ResourceCandidate


# The name the managed-jobs controller gives a job's cluster (skyc.jobs.controller's
# ``cluster_for``): the job's id, then the task's index for a pipeline.
_JOB_CLUSTER = re.compile(r"^skyc-job-(\d+)(?:-\d+)?$")


class LaunchReporter(Protocol):
    def stage(self, name: str, detail: str = "") -> None: ...
    def plan(self, plan: Plan) -> None: ...
    def attempt(self, attempt: Attempt, next_placement: Placement | None) -> None: ...
    def engine_event(self, event: Any) -> None: ...
    def log_line(self, node: str, line: str) -> None: ...
    # A reporter may also have ``log_bytes(data: bytes)``: job output as prefixed bytes,
    # the fast path (used instead of log_line when present).


@dataclass
class LaunchOptions:
    cluster: str | None = None
    infra: str | None = None
    catalog_dir: Path | None = None
    target: str = "cost"
    down: bool = False
    detach: bool = False
    rerun_setup: bool = False
    lock_timeout: float = 600.0
    failover: FailoverPolicy = field(default_factory=FailoverPolicy)
    anywhere: bool = False   # allow re-provisioning a known cluster outside its region
    allow_reshape: bool = False  # remove nodes of a cluster even while jobs run there
    engine: str | None = None  # terraform or pulumi; None: the config's, else the target's
    idle_minutes: float | None = None  # -i: autostop after that idle time (down: tear down)
    confirm: Callable[[str], bool] | None = None  # asked with the change summary; None = yes
    # A reviewed plan file's placements (the chosen one first, then the alternatives
    # failover may use) and the (address, action) changes its first stack listed.
    reviewed: ReviewedPlacements | None = None
    # Called with (cluster, placement) before each attempt (the first and every
    # failover re-target); raises to refuse it (the policy gate).
    admit: Callable[[str, Placement], None] | None = None
    # A constraint on placements (the policy's rules a placement decides): the optimizer
    # places on what it allows; why it refuses one (None: allowed).
    allowed: Callable[[Placement], str | None] | None = None


@dataclass
class ReviewedPlacements:
    placements: list[Placement]
    changes: list[tuple[str, str]]
    engine_plan: bytes | None = None  # made against the cluster's workspace: applied as is
    # Asked when every listed placement failed: may failover go on outside them?
    # None (a non-interactive run): no, the apply stops.
    ask: Callable[[str], bool] | None = None


@dataclass
class LaunchResult:
    cluster: str
    placement: Placement
    attempts: list[Attempt]
    exit_code: int
    job_id: int | None = None
    failure: str | None = None   # which node failed and how, when exit_code != 0


def cluster_home(record: ClusterRecord | None) -> str | None:
    """Where a cluster that has been up stays: ``cloud/region/zone``; None otherwise.

    Its disks and IPs live there, and moving it to another zone would replace every
    node, so ``apply`` keeps it in place (unless ``--any-region``), never destroys its
    resources because an update failed, and does not fail over elsewhere.
    """
    if record is None or record.launched_at is None:
        return None
    parts = [record.cloud] + [p for p in (record.region, record.zone) if p and p != record.cloud]
    return "/".join(parts)


def make_plan(
    tasks: Sequence[Task],
    opts: LaunchOptions,
    *,
    blocked: Sequence[Blocked] = (),
    config: SkycConfig | None = None,
) -> Plan:
    """Optimize the tasks over the catalog, with failed scopes blocked."""
    from skyc.apply.data_sources import task_data
    from skyc.apply.infra import catalog_for
    from skyc.optimizer import optimize

    config = config or load_config()
    catalog = catalog_for(config, tasks, infra=opts.infra, catalog_dir=opts.catalog_dir)
    return optimize(
        list(tasks),
        catalog,
        blocked=blocked,
        target=opts.target,  # type: ignore[arg-type]
        infra=opts.infra,
        allowed=opts.allowed,
        data=task_data(tasks),
    )


def launch(
    tasks: Sequence[Task], opts: LaunchOptions, reporter: LaunchReporter
) -> LaunchResult:
    """Run ``skyc apply`` for one task: plan, provision with failover, run, maybe down."""
    from skyc.state.database import StateDB
    from skyc.state.locks import cluster_lock

    if len(tasks) != 1:
        raise UnsupportedFeature(
            f"apply runs one task at a time; this file holds {len(tasks)}",
            hint="split the pipeline into files, or use `skyc plan` to see its placement",
        )
    task = tasks[0]
    check_task(task)
    spec = _job_spec(task)  # refused now (e.g. an environment too large), not after apply
    config = load_config()
    name = cluster_name_for(task, opts.cluster)
    db = StateDB()
    check_cluster_reuse(name, task, opts.cluster, [j.name for j in db.list_jobs(name)])
    with cluster_lock(
        name, timeout=opts.lock_timeout,
        on_wait=lambda msg: reporter.stage("waiting for lock", msg),
    ):
        try:
            info, placement, attempts = _provision(task, name, opts, config, db, reporter)
            if spec is not None and len(info.nodes) > placement.num_nodes:
                # Each placed node is several hosts (the workers of a multi-host TPU
                # slice): the job runs on every one of them.
                spec = spec.model_copy(update={"num_nodes": None})
        except KeyboardInterrupt:
            # The cluster keeps its status (INIT): what exists is in the engine's state.
            db.add_event(name, "interrupted", "provisioning interrupted (Ctrl-C)")
            raise Interrupted(
                f"provisioning of cluster {name} was interrupted",
                hint=f"run `skyc apply` again to resume (the engine's state is kept), "
                f"or `skyc destroy {name}` to remove what was created",
            ) from None
        autostop = autostop_setting(task, opts)
        autostop_plan = None if autostop is None else plan_cluster_autostop(info, autostop[1])
        recorder = JobRecorder(db, info.name, task.name,
                               announce=None if opts.detach else reporter.stage)
        try:
            spec = _with_buckets(task, spec, info, placement, config, db, reporter)
            exit_code, job_id, failure = _run(task, spec, info, opts, reporter, recorder)
        except KeyboardInterrupt:
            going_down = opts.down and not opts.detach and autostop is None
            raise interrupted(name, recorder.job_id, going_down=going_down) from None
        finally:
            if opts.down and not opts.detach and autostop is None:
                reporter.stage("down", name)
                _teardown(name, db, reporter)
        if autostop is not None and autostop_plan is not None:
            reporter.stage("autostop", f"after {autostop[0]:g} idle minute(s)"
                           + (", down" if autostop[1] else ""))
            set_cluster_autostop(info, autostop_plan, autostop, db)
    return LaunchResult(name, placement, attempts, exit_code, job_id, failure)


AutostopSetting = tuple[float, bool, "str | None"]  # idle minutes, down, wait_for


def autostop_setting(task: Task, opts: LaunchOptions) -> AutostopSetting | None:
    """``-i N [--down]``, else the task's ``resources.autostop``; None when off."""
    if opts.idle_minutes is not None:
        return (opts.idle_minutes, opts.down, None)
    auto = task.resources.autostop
    if auto is None or not auto.enabled:
        return None
    return (float(auto.idle_minutes), auto.down or opts.down, auto.wait_for)


def _check_autostop(task: Task, name: str, placement: Placement, opts: LaunchOptions) -> None:
    from skyc.apply.preflight import check_target_autostop

    setting = autostop_setting(task, opts)
    if setting is not None:
        check_target_autostop(name, placement.cloud, setting[1])


def plan_cluster_autostop(info: ClusterInfo, down: bool) -> AutostopPlan:
    """What autostop runs on the cluster's nodes, from its target's capabilities."""
    from skyc.apply.preflight import check_target_autostop
    from skyc.compiler import target
    from skyc.runtime.autostop import plan_autostop

    check_target_autostop(info.name, info.cloud, down)
    caps = target(info.cloud).capabilities
    return plan_autostop(info, down=down, stop_start=caps.stop_start,
                         creates_resources=caps.creates_resources)


def set_cluster_autostop(info: ClusterInfo, plan: AutostopPlan, setting: AutostopSetting,
                         db: StateDB) -> None:
    """Start autostop on the nodes and record the setting (``skyc status`` shows it)."""
    from skyc.runtime.autostop import set_autostop

    minutes, down, wait_for = setting
    set_autostop(info, plan, idle_minutes=minutes, down=down, wait_for=wait_for)
    db.add_event(info.name, "autostop", f"autostop after {minutes:g} idle minute(s)"
                 + (", down" if down else ", stop"),
                 {"idle_minutes": minutes, "down": down, "wait_for": wait_for})


def _provision(
    task: Task,
    name: str,
    opts: LaunchOptions,
    config: SkycConfig,
    db: StateDB,
    reporter: LaunchReporter,
    blocked: Sequence[Blocked] = (),
    autostop: bool = True,
) -> tuple[ClusterInfo, Placement, list[Attempt]]:
    from skyc.apply.attempts import AttemptSteps, record_failed_apply

    before = db.get_cluster(name)
    home = None if opts.anywhere else cluster_home(before)
    pinned = opts
    if home is not None:
        policy = replace(opts.failover, max_attempts=1, retry_until_up=False)
        pinned = replace(opts, infra=home, failover=policy)
    reporter.stage("optimize")
    plan = _first_plan(task, name, opts, pinned, config, blocked, home)
    reporter.plan(plan)
    candidates = task.candidates()
    chosen = plan.tasks[0].placement
    confirmed = _preflight(task, name, chosen, candidates, opts, config, db, reporter,
                           autostop)
    steps = AttemptSteps(task, name, opts, pinned, config, db, reporter, candidates, chosen,
                         confirmed, blocked, keep_in_place=home is not None)
    made_buckets = _make_buckets(task, name, chosen, config, db, reporter)
    try:
        result = provision_with_failover(
            chosen, provision=steps.provision, cleanup=steps.cleanup,
            next_placement=steps.next_placement, policy=pinned.failover,
            on_attempt=steps.on_attempt,
        )
    except SkycError as exc:
        record_failed_apply(db, name, before, steps.trail, exc)
        if db.get_cluster(name) is None:  # nothing of it is left: nor of its network
            from skyc.apply.networks import release_networks

            release_networks(name, db, reporter.stage, reporter.engine_event)
        if made_buckets and before is None:  # nothing came up: its own buckets go too
            from skyc.apply.buckets import release_cluster_buckets

            release_cluster_buckets(name, db, reporter.stage, reporter.engine_event)
        raise
    db.mark_cluster_up(name, result.value, result.placement)
    return result.value, result.placement, result.attempts


def _make_buckets(task: Task, name: str, chosen: Placement, config: SkycConfig,
                  db: StateDB, reporter: LaunchReporter) -> bool:
    """The buckets the task creates, made before its cluster (whose stack grants them);
    whether the task has any."""
    from skyc.apply.bucket_jobs import has_buckets

    if not has_buckets(task):
        return False
    from skyc.apply.buckets import make_task_buckets

    make_task_buckets(task, name, chosen, config, db, reporter.stage, reporter.engine_event)
    return True


def _first_plan(task: Task, name: str, opts: LaunchOptions, pinned: LaunchOptions,
                config: SkycConfig, blocked: Sequence[Blocked], home: str | None) -> Plan:
    """The optimizer's plan (``pinned``: a cluster that has come up stays at ``home``),
    with a reviewed plan file's placements in place of its own."""
    plan = make_plan([task], pinned, blocked=blocked, config=config)
    if opts.reviewed is None:
        return plan
    first = opts.reviewed.placements[0]
    if home is not None and first.infra != home:
        raise SkycError(
            f"the plan places cluster {name} in {first.infra}, but it lives in {home}; "
            "nothing was applied",
            hint="plan again with --infra " + home + " to keep it there")
    return plan.model_copy(update={"tasks": [plan.tasks[0].model_copy(update={
        "placement": first, "alternatives": opts.reviewed.placements[1:]})]})


def _preflight(task: Task, name: str, chosen: Placement,
               candidates: Sequence[ResourceCandidate], opts: LaunchOptions,
               config: SkycConfig, db: StateDB, reporter: LaunchReporter, autostop: bool
               ) -> StackDiff | None:
    """Before the first attempt: the placement's checks, what a reshape removes (refused
    while jobs run there), and the diff the user confirmed (None: not asked)."""
    check_placement(task, name, chosen, candidates[chosen.candidate_index], config)
    from skyc.apply.bucket_jobs import has_buckets

    if has_buckets(task):
        from skyc.apply.buckets import check_buckets

        reporter.stage("buckets", "checking")
        check_buckets(task, chosen.cloud, config, db)
    if autostop:
        _check_autostop(task, name, chosen, opts)
    reshape = plan_reshape(db.get_cluster(name), chosen)
    if reshape is not None:  # it removes nodes: say what, refuse while jobs run there
        check_reshape(reshape, opts.allow_reshape)
        removed_resources(reshape, chosen, candidates[chosen.candidate_index], config,
                          opts.engine)
        for line in reshape.summary().splitlines():
            reporter.stage("reshape", line)
    confirmed = None
    if opts.confirm is not None and opts.reviewed is None:
        confirmed = _confirm_changes(name, chosen, candidates, config, opts.confirm,
                                     opts.engine)
    if reshape is not None:
        db.reconcile_jobs(name, end_removed_jobs(reshape))
    return confirmed


def provision_cluster(
    task: Task, name: str, opts: LaunchOptions, reporter: LaunchReporter,
    *, blocked: Sequence[Blocked] = (),
) -> tuple[ClusterInfo, Placement, list[Attempt]]:
    """Provision cluster ``name`` for ``task`` with failover, the scopes in ``blocked``
    ruled out from the start, under the cluster's lock; records it UP."""
    from skyc.state.database import StateDB
    from skyc.state.locks import cluster_lock

    check_task(task)
    with StateDB() as db, cluster_lock(name, timeout=opts.lock_timeout):
        # A managed job's cluster ends with the job: autostop has nothing to do there.
        return _provision(task, name, opts, load_config(), db, reporter, blocked,
                          autostop=False)


def teardown_cluster(name: str, reporter: LaunchReporter, lock_timeout: float = 600.0,
                     *, for_job: int | None = None, keep_buckets: bool = False) -> None:
    """End the cluster's jobs, destroy its stack and forget it (under its lock), and
    the buckets that go with it (not persistent) unless ``keep_buckets`` (a managed
    job recovering: its next cluster mounts them again). ``for_job``: the managed job
    whose controller tears its own cluster down."""
    from skyc.state.database import StateDB
    from skyc.state.locks import cluster_lock

    with StateDB() as db, cluster_lock(name, timeout=lock_timeout):
        _teardown(name, db, reporter, for_job, keep_buckets=keep_buckets)


def _confirm_changes(
    name: str,
    placement: Placement,
    candidates: Sequence[ResourceCandidate],
    config: SkycConfig,
    confirm: Callable[[str], bool],
    engine: str | None = None,
) -> StackDiff:
    """Ask to apply the cluster's diff; returns that diff (its saved engine plan is the
    one applied)."""
    from skyc.apply.provision import plan_changes

    diff = plan_changes(name, placement, candidates[placement.candidate_index], config=config,
                        engine=engine)
    counts = ", ".join(f"{n} to {a}" for a, n in diff.summary().items() if a != "no-op")
    lines = [f"cluster {name}: {counts or 'no changes'}"]
    lines += [
        f"  {c.action:>7} {c.address}" for c in diff.changes if c.action not in ("no-op", "read")
    ]
    from skyc.apply.networks import network_note

    network = network_note(name, placement)
    if network is not None:
        lines.append(f"and {network}")
    if not confirm("\n".join(lines)):
        raise SkycError("apply cancelled; nothing was changed")
    return diff


def reviewed_next(placements: Sequence[Placement], blocked: Sequence[Blocked]) -> Placement:
    """Failover after a reviewed plan: the first of its placements not blocked."""
    for p in placements:
        if not any(b.matches(p.cloud, p.region, p.zone) for b in blocked):
            return p
    raise InfeasibleError(
        "every placement the reviewed plan lists has failed",
        hint="run `skyc plan -o FILE` again for new alternatives, and review it")


def _job_spec(task: Task) -> JobSpec | None:
    from skyc.runtime import job_spec_from_task

    return job_spec_from_task(task, buckets=[]) if task.run or task.setup else None


def _with_buckets(task: Task, spec: JobSpec | None, info: ClusterInfo, placement: Placement,
                  config: SkycConfig, db: StateDB, reporter: LaunchReporter
                  ) -> JobSpec | None:
    """The task's buckets made ready (created, filled; checked before provisioning)
    and given to its job. A task without a job still gets its buckets."""
    from skyc.apply.bucket_jobs import has_buckets, job_with_buckets
    from skyc.runtime import job_spec_from_task

    if task.volumes:
        from skyc.apply.volumes import record_volume_users

        record_volume_users(task, info.name, db)
    if not has_buckets(task):
        return spec
    ready = job_with_buckets(task, spec or job_spec_from_task(task, buckets=[]), info,
                             reporter.stage, progress=reporter.engine_event, check=False,
                             config=config, db=db)
    return ready if spec is not None else None


def _run(
    task: Task, spec: JobSpec | None, info: ClusterInfo, opts: LaunchOptions,
    reporter: LaunchReporter, recorder: JobRecorder,
) -> tuple[int, int | None, str | None]:
    from skyc.runtime import run_job

    if spec is None:
        return 0, None, None
    reporter.stage("run", f"{len(info.nodes)} node(s)")
    log_bytes = getattr(reporter, "log_bytes", None)
    result = run_job(
        info, spec, on_output=log_bytes,
        on_line=None if log_bytes is not None else reporter.log_line,
        rerun_setup=opts.rerun_setup, detach=opts.detach, on_start=recorder.started,
        on_wait=lambda text: reporter.stage("boot", text),
    )
    if opts.detach and result.status == "RUNNING":
        from skyc.runtime.watch import start_watcher

        # As `exec -d`: the job's end reaches the state when it ends, so status, queue
        # and logs agree without asking the nodes.
        start_watcher(info, result.job_id, Path(result.log_dir))
    failure = None if result.ok else result.describe_failure()
    recorder.finished(result)
    return result.exit_code, result.job_id, failure


def managed_job_of(cluster: str, db: StateDB | None = None) -> ManagedJob | None:
    """The unfinished managed job whose cluster ``cluster`` is; None for any other."""
    from skyc.model.managed_jobs import cluster_for
    from skyc.state.managed_jobs import ManagedJobStore

    match = _JOB_CLUSTER.match(cluster)
    if match is None:
        return None
    store = ManagedJobStore(db)
    try:
        job = store.get(int(match.group(1)))
    finally:
        if db is None:
            store.close()
    if job is None or job.done:
        return None
    mine = {cluster_for(job, i) for i in range(job.num_tasks)}
    return job if cluster == job.cluster or cluster in mine else None


def check_not_managed(cluster: str, doing: str = "destroying", *, for_job: int | None = None,
                      db: StateDB | None = None) -> None:
    """Refuse to end a managed job's cluster from outside its controller: that would
    cancel the job with no recovery. ``for_job``: the job whose controller acts. A live
    service replica's cluster is refused too (its service takes it down)."""
    from skyc.state.service_claims import check_not_replica

    check_not_replica(cluster, doing)
    job = managed_job_of(cluster, db)
    if job is None or job.id == for_job:
        return
    named = f" ({job.name})" if job.name else ""
    raise SkycError(
        f"cluster {cluster} belongs to managed job {job.id}{named}, which is {job.status}: "
        f"{doing} it would cancel the job with no recovery; the cluster is left as it is",
        hint=f"cancel the job with `skyc jobs cancel {job.id}` (its controller tears the "
        f"cluster down), or let it end (`skyc jobs queue` shows it)")


def skip_managed(names: Sequence[str]) -> tuple[list[str], list[str]]:
    """``skyc down -a``: the clusters to destroy, and a note for each managed job's
    cluster and each service replica's left alone."""
    from skyc.state.service_claims import skip_replicas

    names, notes = skip_replicas(names)
    kept: list[str] = []
    for name in names:
        job = managed_job_of(name)
        if job is None:
            kept.append(name)
        else:
            notes.append(f"{name}: skipped, it runs managed job {job.id} ({job.status}); "
                         f"cancel it with `skyc jobs cancel {job.id}`")
    return kept, notes


def end_cluster_jobs(name: str, *, for_job: int | None = None,
                     db: StateDB | None = None) -> dict[str, list[int]]:
    """Before a cluster is destroyed or stopped: end every job on its nodes, with every
    process the jobs started (daemons too). Unreachable nodes are skipped. By node, the
    jobs ended. Refused on a managed job's cluster unless ``for_job`` is that job (its
    controller acting)."""
    from skyc.model.workspace import recorded_cluster
    from skyc.runtime import stop_all_jobs

    check_not_managed(name, for_job=for_job, db=db)
    info = recorded_cluster(name)
    if info is None or not info.nodes:
        return {}  # never provisioned (or already gone): no node runs a job of it
    return stop_all_jobs(info)


def _teardown(name: str, db: StateDB, reporter: LaunchReporter,
              for_job: int | None = None, *, keep_buckets: bool = False) -> None:
    from skyc.apply.provision import teardown

    end_cluster_jobs(name, for_job=for_job, db=db)
    teardown(name, progress=reporter.engine_event, say=reporter.stage)
    db.add_event(name, "destroy", "cluster destroyed")
    db.remove_cluster(name)
    if not keep_buckets:
        from skyc.apply.buckets import release_cluster_buckets

        release_cluster_buckets(name, db, reporter.stage, reporter.engine_event)
