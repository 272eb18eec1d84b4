"""``skyc exec``, ``skyc queue``, ``skyc logs`` and ``skyc cancel``: jobs on a running cluster."""

from __future__ import annotations

import datetime
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from skyc.cli import params
from skyc.cli.options import (
    INFRA_HELP,
    all_users_option,
    cpus_option,
    env_file_option,
    env_values,
    gpus_option,
    instance_type_option,
    memory_option,
    one_infra,
)
from skyc.schemas import versions

if TYPE_CHECKING:
    from skyc.model.nodes import ClusterInfo
    from skyc.runtime import JobResult, JobSpec
    from skyc.task import Task


def load_cluster(name: str) -> ClusterInfo:
    """The cluster's nodes, from ``$SKYC_HOME/clusters/<name>/cluster.json``."""
    from pydantic import ValidationError

    from skyc.errors import ConfigError, StateError
    from skyc.model.nodes import ClusterInfo
    from skyc.stacks.workspace import cluster_workspace

    path = cluster_workspace(name) / "cluster.json"
    if not path.exists():
        raise ConfigError(f"no cluster named '{name}' ({path} does not exist)",
                          hint="see your clusters with: skyc status")
    try:
        return ClusterInfo.model_validate_json(path.read_text())
    except (OSError, ValidationError) as exc:
        raise StateError(f"{path}: cannot read the cluster's nodes: {exc}") from None


def write_output(data: bytes) -> None:
    """Job output, already prefixed by node: straight to stdout as bytes."""
    out = sys.stdout.buffer
    out.write(data)
    out.flush()


def _print_line(label: str, line: str) -> None:
    write_output(f"{label} {line}\n".encode("utf-8", "replace"))


def _check_fits(task_path: Path, cluster: str, info: ClusterInfo, task: Task) -> None:
    from skyc.errors import ConfigError
    from skyc.runtime.fit import accelerator_problem
    from skyc.state.database import StateDB

    if task.num_nodes > len(info.nodes):
        raise ConfigError(
            f"{task_path}: num_nodes is {task.num_nodes}, but cluster '{cluster}' has "
            f"{len(info.nodes)} node(s)",
            hint="use `skyc apply` to grow the cluster, or lower num_nodes",
        )
    with StateDB() as db:
        record = db.get_cluster(cluster)
    have: dict[str, float] = {}
    if record is not None:
        have = {str(k): float(v) for k, v in
                (record.placement.get("accelerators") or {}).items()}
    problem = accelerator_problem(task.candidates(), have, info.num_gpus_per_node)
    if problem:
        raise ConfigError(f"{task_path}: {problem} (cluster '{cluster}')",
                          hint="run it on a cluster with those accelerators (`skyc apply`), "
                          "or change the task's resources.accelerators")


def _on_every_host(spec: Any, cluster: str, info: ClusterInfo) -> Any:
    """A cluster with more nodes than were placed (each placed node a multi-host TPU
    slice): the task's num_nodes counts placed nodes, each that many hosts."""
    from skyc.state.database import StateDB

    with StateDB() as db:
        record = db.get_cluster(cluster)
    placed = int((record.placement.get("num_nodes") or 0) if record is not None else 0)
    hosts = len(info.nodes)
    if spec.num_nodes is None or placed < 1 or hosts <= placed or hosts % placed:
        return spec
    return spec.model_copy(update={"num_nodes": spec.num_nodes * (hosts // placed)})


def _check_infra(cluster: str, info: ClusterInfo, infra: str | None) -> None:
    """``exec --infra``: the cluster must run where --infra says (each part given)."""
    if infra is None:
        return
    from skyc.errors import ConfigError
    from skyc.optimizer import parse_infra

    have = (info.cloud, info.region, info.zone)
    for want, got in zip(parse_infra(infra), have, strict=True):
        if want is not None and want != got:
            where = "/".join(p for p in have if p)
            raise ConfigError(f"--infra {infra}: cluster '{cluster}' runs on {where}",
                              hint="drop --infra, or launch a cluster there with skyc launch")


def exec_cmd(
    cluster: str = typer.Argument(..., metavar="CLUSTER", help="Name of a running cluster."),
    task: str = typer.Argument(
        ..., metavar="TASK|COMMAND",
        help="Task YAML to run on the cluster, or a command in quotes ('nvidia-smi')."),
    num_nodes: int | None = typer.Option(
        None, "--num-nodes", metavar="N", parser=params.Count(1, 10_000),
        help="Nodes to run on (default: the task's num_nodes; 1 for a command)."),
    infra: list[str] = typer.Option([], "--infra", metavar="INFRA", help=INFRA_HELP + (
        " On exec: refused unless the cluster runs there.")),
    gpus: str | None = gpus_option(),
    cpus: str | None = cpus_option(),
    memory: str | None = memory_option(),
    instance_type: str | None = instance_type_option(),
    env_file: Path | None = env_file_option(),
    env: list[str] = typer.Option([], "--env", metavar="KEY[=VAL]",
                                  help="KEY=VAL (or KEY, from this environment)."),
    secret: list[str] = typer.Option(
        [], "--secret", metavar="KEY[=VAL]",
        help="KEY=VAL, or KEY to take the value from this environment."),
    detach: bool = typer.Option(False, "--detach", "-d", help="Start the run and return."),
    rerun_setup: bool = typer.Option(False, "--setup", "--rerun-setup",
                                     help="Run setup even when it has not changed."),
    yes: bool = typer.Option(False, "--yes", "-y",
                             help="Run on another user's cluster without asking."),
) -> None:
    """Sync the task's workdir and run its setup and run commands on num_nodes nodes."""
    from skyc.apply.ownership import check_owner, record_override
    from skyc.cli.options import terminal_ask
    from skyc.task.overrides import resource_overrides

    # The task is judged first: before the cluster is looked up or locked.
    overrides = resource_overrides(gpus=gpus, cpus=cpus, memory=memory,
                                   instance_type=instance_type, num_nodes=num_nodes)
    the_task, spec = _exec_task(task, env_values(env_file, env), secret, overrides)
    info = load_cluster(cluster)
    _check_infra(cluster, info, one_infra(infra))
    from skyc.task.inline import is_task_file

    _check_fits(Path(task) if is_task_file(task) else Path("<command line>"), cluster, info,
                the_task)
    owner = check_owner(cluster, "exec", yes, terminal_ask())
    if owner is not None:
        record_override(cluster, "exec", owner)
    from skyc.apply.bucket_jobs import job_with_buckets

    spec = job_with_buckets(the_task, spec, info, lambda stage, text: _announce(
        f"{stage}: {text}"))
    result = _run_on_cluster(cluster, info, the_task, _on_every_host(spec, cluster, info),
                             detach=detach, rerun_setup=rerun_setup)
    if detach and result.ok:
        _watch_detached(cluster, info, result)
    result.raise_for_status()


def _exec_task(task: str, envs: dict[str, str], secret: list[str],
               overrides: dict[str, Any]) -> tuple[Task, JobSpec]:
    """The one task ``exec`` runs, from its file or the command given, checked as apply
    checks it; and its job spec."""
    from skyc.apply.preflight import check_task
    from skyc.errors import UnsupportedFeature
    from skyc.runtime import job_spec_from_task
    from skyc.task import load_tasks, parse_secret_flags
    from skyc.task.inline import inline_task, is_task_file

    if is_task_file(task):
        task_file = load_tasks(Path(task), env=envs, secrets=parse_secret_flags(secret),
                               require_values=True, overrides=overrides)
    else:
        task_file = inline_task(task, env=envs, secrets=parse_secret_flags(secret),
                                overrides=overrides)
    if len(task_file.tasks) != 1:
        raise UnsupportedFeature(
            f"{task}: holds {len(task_file.tasks)} tasks; exec runs a single task")
    the_task = task_file.tasks[0]
    check_task(the_task)
    return the_task, job_spec_from_task(the_task, buckets=[])


def _run_on_cluster(cluster: str, info: ClusterInfo, task: Task, spec: JobSpec, *,
                    detach: bool, rerun_setup: bool) -> JobResult:
    """Run ``task`` (as ``spec``) on the cluster's nodes, under its lock; recorded in
    the state database when skyc knows the cluster."""
    from skyc.runtime import run_job
    from skyc.state.cluster_jobs import JobRecorder, interrupted
    from skyc.state.database import StateDB

    with StateDB() as db:
        recorder = JobRecorder(db, cluster, task.name,
                               announce=None if detach else _announce) \
            if db.get_cluster(cluster) else None
        try:
            result = run_job(info, spec, on_output=write_output, rerun_setup=rerun_setup,
                             detach=detach, hold_lock=True,
                             on_start=recorder.started if recorder else None,
                             on_wait=_announce)
        except KeyboardInterrupt:
            raise interrupted(cluster, recorder.job_id if recorder else None) from None
        if recorder is not None:
            recorder.finished(result)
    return result


def _watch_detached(cluster: str, info: ClusterInfo, result: JobResult) -> None:
    """A detached run goes on: its watcher records how it ends; say how to follow it."""
    from skyc.cli.output import err_console
    from skyc.runtime.watch import start_watcher

    start_watcher(info, result.job_id, Path(result.log_dir))
    err_console.print(
        f"job {result.job_id} started; follow it with: skyc logs {cluster} "
        f"{result.job_id} --follow", highlight=False, markup=False)


def _announce(text: str) -> None:
    from skyc.cli.output import err_console

    err_console.print(text, highlight=False, markup=False)


def _reconcile(cluster: str, jobs: list[dict[str, Any]]) -> dict[int, str | None]:
    """What the nodes report, into the state database's unfinished records; who
    submitted each job the state records (by the cluster's job id)."""
    from skyc.state.database import StateDB

    with StateDB() as db:
        if db.get_cluster(cluster) is None:
            return {}
        db.reconcile_jobs(cluster, {int(j["job_id"]): str(j["status"]) for j in jobs})
        return {j.job_id: j.owner for j in db.list_jobs(cluster) if j.job_id is not None}


_FINISHED = ("SUCCEEDED", "FAILED", "CANCELLED", "FAILED_SETUP", "SETUP_DONE")


def _job_rows(cluster: str) -> list[dict[str, Any]]:
    """The cluster's jobs as ``queue --format json`` lists them (``skyc schema queue``)."""
    from skyc.runtime import queue

    jobs = queue(load_cluster(cluster))
    owners = _reconcile(cluster, jobs)
    return [{"cluster": cluster, "id": int(job["job_id"]), "name": job["name"] or None,
             "owner": owners.get(int(job["job_id"])),
             "submitted_at": job["submitted"], "status": str(job["status"]),
             "nodes": len(job["nodes"]),
             "node_statuses": [{"node": n, "status": s} for n, s in job["nodes"].items()]}
            for job in jobs]


def _table_row(job: dict[str, Any], owners: bool = False) -> tuple[str, ...]:
    when = datetime.datetime.fromtimestamp(job["submitted_at"] or 0)
    nodes = ", ".join(f"{n['node']}: {n['status']}" for n in job["node_statuses"])
    return (job["cluster"], str(job["id"]), job["name"] or "-",
            *((job["owner"] or "-",) if owners else ()),
            when.strftime("%Y-%m-%d %H:%M:%S"), job["status"], nodes)


def _queue_names(clusters: list[str], all_clusters: bool, all_users: bool = False) -> list[str]:
    """The clusters named, or (none named, or --all) every cluster skyc knows of: the
    caller's own, everyone's with ``all_users``."""
    from skyc.settings.config import skyc_home
    from skyc.state.database import StateDB

    names = list(clusters)
    if names and not all_clusters:
        return names
    with StateDB() as db:
        mine = None if all_users else db.caller()
        known = {c.name for c in db.list_clusters(owner=mine)}
    root = skyc_home() / "clusters"
    known |= {p.parent.name for p in root.glob("*/cluster.json")} if root.is_dir() else set()
    return sorted(set(names) | known)


def queue_cmd(
    clusters: list[str] = typer.Argument(None, metavar="CLUSTER",
                                         help="Clusters to list (default: every cluster)."),
    all_clusters: bool = typer.Option(False, "-a", "--all",
                                      help="Every cluster's jobs (the default with no CLUSTER)."),
    fmt: str = typer.Option("table", "--format", metavar="table|json",
                            help="table, or json (`skyc schema queue`: format_version "
                            f"{versions.QUEUE})."),
    all_users: bool = all_users_option(),
) -> None:
    """List the jobs of a cluster, or of every cluster (yours; everyone's with -u)."""
    import json

    from skyc.cli.output import fitted_table, print_table, print_warning
    from skyc.errors import ConfigError

    if fmt not in ("table", "json"):
        raise ConfigError(f"--format {fmt}: expected 'table' or 'json'")
    names = _queue_names(list(clusters or []), all_clusters, all_users)
    if not names:
        print_warning("no clusters; launch one with: skyc launch TASK")
    jobs = _queue_jobs(names, bool(clusters) and not all_clusters, all_users)
    if fmt == "json":
        typer.echo(json.dumps({"format_version": versions.QUEUE, "jobs": jobs}, indent=2,
                              sort_keys=True))
        return
    if names:
        columns = ("CLUSTER", "ID", "NAME", *(("OWNER",) if all_users else ()), "SUBMITTED",
                   "STATUS", "NODES")
        print_table(fitted_table(None, columns, [_table_row(j, all_users) for j in jobs],
                                 drop=("NODES", "SUBMITTED")))


def _queue_jobs(names: list[str], named: bool, all_users: bool) -> list[dict[str, Any]]:
    """The jobs of clusters ``names``: the caller's (and those the state does not say
    whose they are), everyone's with ``all_users``. A cluster that cannot be read is
    an error when ``named`` alone, else a warning."""
    from skyc.cli.output import print_warning
    from skyc.errors import SkycError
    from skyc.state.database import caller, owned_by

    jobs: list[dict[str, Any]] = []
    for name in names:
        try:
            jobs += _job_rows(name)
        except SkycError as exc:
            if named:
                raise
            print_warning(f"{name}: {exc}")
    if all_users:
        return jobs
    me = caller()
    return [j for j in jobs if owned_by(j["owner"], me)]


_KEPT_CODES = {"SUCCEEDED": 0, "FAILED": 1, "FAILED_SETUP": 1, "CANCELLED": 143}


def _kept_logs(cluster: str, job: int | None) -> int | None:
    """A job's logs as kept here once its cluster is down (the last incarnation's);
    returns the job's exit code as recorded, or None when no logs are kept."""
    from skyc.cli.output import err_console
    from skyc.errors import RuntimeAgentError
    from skyc.runtime.logs import kept_logs, read_job_table, replay_job, stored_job_ids

    directory = kept_logs(cluster)
    if directory is None:
        return None
    ids = stored_job_ids(directory)
    job_id = job if job is not None else ids[-1]
    if job_id not in ids:
        raise RuntimeAgentError(
            f"cluster {cluster} is down and the logs kept of it hold no job {job_id}",
            hint=f"jobs kept: {', '.join(map(str, ids))} (in {directory})")
    entry = next((j for j in read_job_table(directory) if j.get("job_id") == job_id), {})
    status = str(entry.get("status") or "unknown")
    err_console.print(f"cluster {cluster} is down: job {job_id} ({status} when last seen), "
                      f"as kept in {directory / str(job_id)}", highlight=False, markup=False)
    replay_job(directory / str(job_id), dict(entry.get("labels") or {}), write_output)
    code = entry.get("exit_code")
    return code if isinstance(code, int) else _KEPT_CODES.get(status, 0)


def logs_cmd(
    cluster: str = typer.Argument(..., metavar="CLUSTER", help="Name of a running cluster."),
    job: int | None = typer.Argument(
        None, metavar="JOB_ID", parser=params.JOB_ID, help="Job id (default: the latest job)."),
    follow: bool = typer.Option(False, "--follow", "-f", help="Keep streaming until it ends."),
) -> None:
    """Print a job's logs from every node, each line prefixed with its node.

    Exits with the job's code once it has ended (0 while it still runs). Once the
    cluster is down, prints the logs kept of its last incarnation's jobs."""
    from skyc.apply.reconcile import removed_nodes_outcome
    from skyc.errors import ConfigError, JobFailed
    from skyc.runtime import queue, tail_logs
    from skyc.stacks.workspace import check_cluster_name

    check_cluster_name(cluster)
    try:
        info = load_cluster(cluster)
    except ConfigError:
        kept = _kept_logs(cluster, job)
        if kept is None:
            raise
        if kept > 0:
            raise JobFailed(f"job {job if job is not None else '(latest)'} on {cluster} "
                            f"exited with code {kept}", kept) from None
        return
    code = tail_logs(info, job, follow, on_output=write_output)
    jobs = queue(info)
    _reconcile(cluster, jobs)
    latest = job if job is not None else max((int(j["job_id"]) for j in jobs), default=0)
    recorded = removed_nodes_outcome(cluster, {n.name for n in info.nodes}, latest,
                                     write_output)  # nodes a reshape removed since
    code = code if recorded is None else recorded
    if code > 0:
        raise JobFailed(f"job {job if job is not None else '(latest)'} on {cluster} exited "
                        f"with code {code}", code)


def cancel_cmd(
    cluster: str = typer.Argument(..., metavar="CLUSTER", help="Name of a running cluster."),
    jobs: list[int] = typer.Argument(None, metavar="JOB_ID", parser=params.JOB_ID,
                                     help="Job ids."),
    all_jobs: bool = typer.Option(False, "-a", "--all", help="Every unfinished job."),
) -> None:
    """Stop jobs on every node (each job's whole process tree)."""
    from skyc.cli.output import console
    from skyc.errors import ConfigError
    from skyc.runtime import cancel, queue

    ids = list(jobs or [])
    if all_jobs == bool(ids):
        raise ConfigError("cancel: give job ids or -a, not both and not neither",
                          hint=f"e.g. skyc cancel {cluster} 2, or skyc cancel {cluster} -a")
    info = load_cluster(cluster)
    if all_jobs:
        ids = [int(j["job_id"]) for j in queue(info) if j["status"] not in _FINISHED]
        if not ids:
            console.print(f"{cluster}: no unfinished jobs", markup=False)
    for job in ids:
        stopped = cancel(info, job)
        if stopped:
            console.print(f"job {job} on {cluster}: cancelled", markup=False)
        else:
            console.print(f"job {job} on {cluster} had already finished", markup=False)
    _reconcile(cluster, queue(info))


def register(app: typer.Typer) -> None:
    from skyc.cli.output import json_errors

    app.command("exec")(exec_cmd)
    app.command("queue")(json_errors(queue_cmd, "queue"))
    app.command("logs")(logs_cmd)
    app.command("cancel")(cancel_cmd)
