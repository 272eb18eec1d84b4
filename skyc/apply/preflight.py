"""Refuse a task that cannot run before any resource is created.

``apply``, ``exec`` and a managed-jobs launch call :func:`check_task` before they
take a lock or plan, and :func:`check_placement` once a placement is chosen and
before the engine runs. Each reports every problem at once, as one
:class:`Refused` error, so a task that was always going to fail creates nothing.
Every later placement of a failover gets the same check from
:func:`check_failover_placement`, which fails that attempt (nothing is created)
and lets failover move to another target. Applying another shape to a cluster
that is up goes through :func:`plan_reshape` (which nodes go, which jobs still run
there) and :func:`check_reshape` (refused while they run, unless allowed).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from skyc.errors import ProvisionError, ProvisionFailure, Refused, SkycError, UnsupportedFeature

if TYPE_CHECKING:
    from skyc.model.nodes import ClusterInfo
    from skyc.model.plan import Placement, Plan
    from skyc.settings.config import SkycConfig
    from skyc.state.database import ClusterRecord
    from skyc.task import Task
    from skyc.task.candidate import ResourceCandidate


def _subject(task: Task) -> str:
    return f"task '{task.name}'" if task.name else "the task"


def _mount_problems(task: Task) -> list[str]:
    from skyc.errors import StorageError
    from skyc.storage import bucket_uses
    from skyc.task.buckets import local_source

    out = []
    try:  # names, stores, modes and targets; the buckets themselves once placed
        bucket_uses(task, None, s3_configured=True)
    except StorageError as exc:
        out.append(exc.message + (f"; {exc.hint}" if exc.hint else ""))
    for target, source in sorted(task.file_mounts.items()):
        local = local_source(source)
        if local is not None and not Path(local).expanduser().exists():
            out.append(f"file_mounts.{target}: {source} does not exist on this machine")
    return out


def task_problems(task: Task) -> list[str]:
    """Why ``task`` cannot run anywhere, whatever its placement (empty when it can)."""
    out = []
    if task.pool is not None:
        out.append("pool: skyc does not run pools of workers yet; plan it with `skyc plan`, "
                   "or drop the pool section to launch one cluster")
    if task.workdir is not None:
        if not isinstance(task.workdir, str):
            out.append("workdir: a git repository workdir ({url, ref}) is not supported yet; "
                       "clone it locally and set workdir to its path")
        elif not Path(task.workdir).expanduser().is_dir():
            out.append(f"workdir: {task.workdir} is not a directory on this machine")
    out += _mount_problems(task)
    out += [f"secrets.{k}: no value given; pass it with --secret {k}"
            for k, v in sorted(task.secrets.items()) if v is None]
    out += [f"envs.{k}: no value given; pass it with --env {k}=VALUE"
            for k, v in sorted(task.envs.items()) if v is None]
    return out


def check_task(task: Task) -> None:
    """Raise :class:`Refused` when ``task`` cannot run whatever its placement."""
    problems = task_problems(task)
    if problems:
        raise Refused(_subject(task), problems)


def check_autostop(cluster: str, *, down: bool, stop_start: bool,
                   creates_resources: bool) -> None:
    """Refuse, before anything is created, autostop that the target cannot carry out."""
    if not creates_resources:
        raise UnsupportedFeature(
            f"cluster {cluster}: its nodes are existing machines (an SSH pool); skyc "
            "cannot stop or remove them, so autostop is not available",
            hint=f"run `skyc destroy {cluster}` when done")
    if not stop_start and not down:
        raise UnsupportedFeature(
            f"cluster {cluster}: its nodes cannot be stopped, only torn down",
            hint="use autostop with --down (resources.autostop: {down: true})")
    if stop_start and down:
        raise UnsupportedFeature(
            f"cluster {cluster}: autostop --down is not available on this target yet "
            "(a node can stop itself, not delete its cluster's stack)",
            hint="use autostop without --down (the instances stop, their disks are kept), "
            "or `skyc destroy` when done")




def check_target_autostop(cluster: str, cloud: str, down: bool) -> None:
    """Refuse autostop (with ``down`` or not) that ``cloud``'s target cannot carry out."""
    from skyc.compiler import target

    caps = target(cloud).capabilities
    check_autostop(cluster, down=down, stop_start=caps.stop_start,
                   creates_resources=caps.creates_resources)


def autostop_problem(task: Task, cluster: str, cloud: str) -> str | None:
    """What apply would say when it refuses the task's ``resources.autostop`` on
    ``cloud``; None when it would not. Plan says it too, in the same words."""
    auto = task.resources.autostop
    if auto is None or not auto.enabled:
        return None
    try:
        check_target_autostop(cluster, cloud, bool(auto.down))
    except UnsupportedFeature as exc:
        return str(exc) + (f" ({exc.hint})" if exc.hint else "")
    return None


def apply_refusals(tasks: Sequence[Task], plan: Plan, clusters: Sequence[str]) -> list[str]:
    """What `skyc apply` would refuse of this plan, in its words: plan says it too."""
    out = []
    for task, tp, cluster in zip(tasks, plan.tasks, clusters, strict=True):
        problem = autostop_problem(task, cluster, tp.placement.cloud)
        if problem:
            out.append(f"apply would refuse {tp.name} on {tp.placement.infra}: {problem}")
    return out


def node_limit_problem(cloud: str, num_nodes: int) -> str | None:
    """Why ``num_nodes`` is more than the target allows (None: within its limit, or the
    target is one skyc cannot provision, which :func:`placement_problems` names)."""
    from skyc.compiler import capabilities

    try:
        most = capabilities(cloud).max_nodes
    except UnsupportedFeature:
        return None
    if num_nodes > most:
        return (f"num_nodes: {num_nodes} is more than {cloud} supports in one cluster "
                f"({most})")
    return None


def placement_problems(
    cluster: str, placement: Placement, candidate: ResourceCandidate, config: SkycConfig
) -> list[str]:
    """Why the target cannot provision ``placement`` (empty when it can). Builds the
    cluster's stack in memory (nothing is written), so every refusal of the target's
    compiler (placement, image, size) is found here."""
    from skyc.compiler import build_stack
    from skyc.stacks.workspace import cluster_workspace

    limit = node_limit_problem(placement.cloud, placement.num_nodes)
    if limit is not None:
        return [limit]
    try:
        build_stack(cluster, placement, candidate, config=config,
                    workspace=cluster_workspace(cluster))
    except SkycError as exc:
        return [str(exc) + (f" ({exc.hint})" if exc.hint else "")]
    return []


def check_placement(
    task: Task,
    cluster: str,
    placement: Placement,
    candidate: ResourceCandidate,
    config: SkycConfig,
) -> None:
    """Raise :class:`Refused` when the target cannot provision ``placement``."""
    problems = placement_problems(cluster, placement, candidate, config)
    if problems:
        raise Refused(f"{_subject(task)} on {placement.infra}", problems)


def check_failover_placement(
    task: Task,
    cluster: str,
    placement: Placement,
    candidate: ResourceCandidate,
    config: SkycConfig,
) -> None:
    """Before a failover attempt's engine runs: raise a retryable ProvisionError (code
    ``Refused``, scope ``cloud``) when that target cannot provision ``placement``, so
    failover blocks the target and moves on, and nothing is created for the attempt."""
    problems = placement_problems(cluster, placement, candidate, config)
    if problems:
        raise ProvisionError(
            f"{_subject(task)} cannot run on {placement.infra}: " + "; ".join(problems),
            ProvisionFailure(code="Refused", scope="cloud", retryable=True,
                             cloud=placement.cloud, region=placement.region,
                             zone=placement.zone),
        )


def check_cluster_reuse(
    cluster: str, task: Task, explicit: str | None, job_names: list[str | None]
) -> None:
    """Refuse to run ``task`` on ``cluster`` when the cluster was named after another
    task whose name comes out the same (``job_names``: the tasks that ran there), unless
    the cluster was named explicitly with ``-c``."""
    from skyc.model.cluster_names import stack_safe_name

    if explicit:
        return
    for other in job_names:
        if other != task.name and stack_safe_name(other) == cluster:
            raise SkycError(
                f"tasks {task.name!r} and {other!r} would share cluster {cluster!r} "
                "(a cluster name keeps lower-case letters, digits and '-', 40 at most)",
                hint=f"name another cluster with -c NAME, or reuse this one with -c {cluster}",
            )


# -- reshaping an existing cluster ---------------------------------------------

# A placement that differs in one of these replaces every node.
_MACHINE = ("cloud", "region", "zone", "instance_type", "use_spot")
_ENDED = frozenset({"SUCCEEDED", "FAILED", "FAILED_SETUP", "CANCELLED"})


class Reshape:
    """What applying another shape to a cluster that is up removes: ``removed`` nodes
    (replaced ones included), ``resources`` the engine deletes or replaces, and
    ``busy``: the unfinished jobs on those nodes (job id -> what it is). A plain class:
    a dataclass's methods are compiled when its module is imported, on every exec."""

    def __init__(self, cluster: ClusterInfo, after: int, removed: list[str]) -> None:
        self.cluster, self.after, self.removed = cluster, after, removed
        self.busy: dict[int, str] = {}
        self.resources: list[str] = []
        self.unknown: str | None = None  # why the jobs on the removed nodes could not be read

    def summary(self) -> str:
        name = self.cluster.name
        lines = [f"cluster {name}: {len(self.cluster.nodes)} -> {self.after} node(s); "
                 f"removes node(s) {', '.join(self.removed)}"]
        lines += [f"removes {address}" for address in self.resources]
        lines += [f"stops job {jid} ({what})" for jid, what in sorted(self.busy.items())]
        return "\n".join(lines)


def _busy_on(info: ClusterInfo, removed: list[str]) -> dict[int, str]:
    from skyc.runtime import queue

    busy = {}
    for job in queue(info):
        on = [n for n in removed if job["nodes"].get(n, "PENDING") not in _ENDED]
        if job["status"] not in _ENDED and on:
            busy[int(job["job_id"])] = (f"{job['name'] or '-'}, {job['status']} on "
                                        f"{', '.join(on)}")
    return busy


def plan_reshape(record: ClusterRecord | None, placement: Placement) -> Reshape | None:
    """The nodes that applying ``placement`` to the cluster of ``record`` removes, and
    the jobs still running on them (read from the nodes); None when it removes none
    (or the cluster never came up)."""
    if record is None or record.launched_at is None:
        return None
    from skyc.model.workspace import recorded_cluster

    info = recorded_cluster(record.name)
    if info is None or not info.nodes:
        return None
    doc = placement.model_dump(mode="json")
    same = all((record.placement.get(k) or None) == (doc.get(k) or None) for k in _MACHINE)
    keep = placement.num_nodes if same else 0
    removed = [n.name for n in sorted(info.nodes, key=lambda n: n.rank) if n.rank >= keep]
    if not removed:
        return None
    reshape = Reshape(info, placement.num_nodes, removed)
    try:
        reshape.busy = _busy_on(info, removed)
    except SkycError as exc:
        reshape.unknown = exc.message
    return reshape


def check_reshape(reshape: Reshape, allow: bool) -> None:
    """Refuse (nothing changed) to remove nodes where jobs still run, or whose jobs
    cannot be read, unless ``allow`` (``--allow-reshape``)."""
    name = reshape.cluster.name
    if allow or (not reshape.busy and reshape.unknown is None):
        return
    if reshape.busy:
        jobs = "; ".join(f"job {j} ({w})" for j, w in sorted(reshape.busy.items()))
        why = f"jobs still run there: {jobs}"
        first = min(reshape.busy)
        hint = (f"wait for them to end, cancel them (`skyc cancel {name} {first}`), or pass "
                "--allow-reshape to stop them and remove the nodes")
    else:
        why = f"their jobs cannot be read ({reshape.unknown})"
        hint = "pass --allow-reshape to remove the nodes anyway"
    raise SkycError(
        f"apply would remove node(s) {', '.join(reshape.removed)} of cluster {name} "
        f"({len(reshape.cluster.nodes)} -> {reshape.after} nodes), and {why}; nothing "
        "was changed", hint=hint)


def removed_resources(
    reshape: Reshape, placement: Placement, candidate: ResourceCandidate, config: SkycConfig,
    engine: str | None = None,
) -> list[str]:
    """The resources the engine would delete or replace for ``placement`` (it plans;
    nothing is changed), also kept in ``reshape.resources``."""
    from skyc.apply.provision import plan_changes

    diff = plan_changes(reshape.cluster.name, placement, candidate, config=config,
                        engine=engine)
    reshape.resources = [f"{c.address} ({c.action})" for c in diff.changes
                         if c.action in ("delete", "replace")]
    return reshape.resources


def end_removed_jobs(reshape: Reshape) -> dict[int, str]:
    """Before the nodes go: stop their unfinished jobs on every node (a job does not
    run on with a node missing), then every process left on the removed nodes.
    Returns each job's status as the nodes report it afterwards (job id -> status)."""
    from skyc.runtime import cancel, queue, stop_all_jobs

    for job_id in sorted(reshape.busy):
        with contextlib.suppress(SkycError):
            cancel(reshape.cluster, job_id)
    seen: dict[int, str] = {}
    with contextlib.suppress(SkycError):
        seen = {int(j["job_id"]): str(j["status"]) for j in queue(reshape.cluster)}
    going = [n for n in reshape.cluster.nodes if n.name in reshape.removed]
    with contextlib.suppress(SkycError):
        stop_all_jobs(reshape.cluster.model_copy(update={"nodes": going}))
    return seen
