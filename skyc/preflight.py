"""Refuse a task that cannot run before any resource is created.

``apply``, ``exec`` and a managed-jobs launch call :func:`check_task` before they
take a lock or plan, and :func:`check_placement` once a placement is chosen and
before the engine runs. Each reports every problem at once, as one
:class:`Refused` error, so a task that was always going to fail creates nothing.
Every later placement of a failover gets the same check from
:func:`check_failover_placement`, which fails that attempt (nothing is created)
and lets failover move to another target.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from skyc.errors import ProvisionError, ProvisionFailure, SkycError, UnsupportedFeature

if TYPE_CHECKING:
    from skyc.config import SkycConfig
    from skyc.optimizer.plan import Placement
    from skyc.task import Task
    from skyc.task.candidate import ResourceCandidate


class Refused(UnsupportedFeature):
    """A task that cannot run as written; ``problems`` lists why, one per field."""

    def __init__(self, subject: str, problems: list[str]) -> None:
        self.problems = list(problems)
        lines = "\n".join(f"  {p}" for p in self.problems)
        super().__init__(f"{subject} cannot run, nothing was created:\n{lines}",
                         hint="fix the fields named above and run the command again")


def _subject(task: Task) -> str:
    return f"task '{task.name}'" if task.name else "the task"


def _mount_problems(task: Task) -> list[str]:
    from skyc.task import is_bucket_uri

    out = []
    for target, source in sorted(task.file_mounts.items()):
        if not isinstance(source, str):
            out.append(f"file_mounts.{target}: storage mounts (buckets) are not supported "
                       "yet; mount a local file or directory, or copy the data in setup")
        elif is_bucket_uri(source) or "://" in source:
            out.append(f"file_mounts.{target}: {source!r} is a bucket or URL; only local "
                       "files and directories can be mounted for now")
        elif not Path(source).expanduser().exists():
            out.append(f"file_mounts.{target}: {source} does not exist on this machine")
    if task.volumes:
        out.append("volumes: volumes are not supported yet")
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
    from skyc.launch import stack_safe_name

    if explicit:
        return
    for other in job_names:
        if other != task.name and stack_safe_name(other) == cluster:
            raise SkycError(
                f"tasks {task.name!r} and {other!r} would share cluster {cluster!r} "
                "(a cluster name keeps lower-case letters, digits and '-', 40 at most)",
                hint=f"name another cluster with -c NAME, or reuse this one with -c {cluster}",
            )
