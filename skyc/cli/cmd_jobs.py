"""``skyc exec``, ``skyc queue``, ``skyc logs`` and ``skyc cancel``: jobs on a running cluster."""

from __future__ import annotations

import datetime
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from skyc.cli import params

if TYPE_CHECKING:
    from skyc.nodes import ClusterInfo
    from skyc.task import Task


def load_cluster(name: str) -> ClusterInfo:
    """The cluster's nodes, from ``$SKYC_HOME/clusters/<name>/cluster.json``."""
    from pydantic import ValidationError

    from skyc.errors import ConfigError, StateError
    from skyc.nodes import ClusterInfo
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
    from skyc.state import StateDB

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
    from skyc.state import StateDB

    with StateDB() as db:
        record = db.get_cluster(cluster)
    placed = int((record.placement.get("num_nodes") or 0) if record is not None else 0)
    hosts = len(info.nodes)
    if spec.num_nodes is None or placed < 1 or hosts <= placed or hosts % placed:
        return spec
    return spec.model_copy(update={"num_nodes": spec.num_nodes * (hosts // placed)})


def exec_cmd(
    cluster: str = typer.Argument(..., help="Name of a running cluster."),
    task: Path = typer.Argument(..., help="Task YAML to run on the cluster."),
    env: list[str] = typer.Option([], "--env", help="KEY=VAL (or KEY, from this environment)."),
    secret: list[str] = typer.Option(
        [], "--secret", help="KEY=VAL, or KEY to take the value from this environment."),
    detach: bool = typer.Option(False, "--detach", "-d", help="Start the run and return."),
    rerun_setup: bool = typer.Option(False, "--setup", "--rerun-setup",
                                     help="Run setup even when it has not changed."),
) -> None:
    """Sync the task's workdir and run its setup and run commands on num_nodes nodes."""
    from skyc.errors import UnsupportedFeature
    from skyc.launch import JobRecorder
    from skyc.preflight import check_task
    from skyc.runtime import job_spec_from_task, run_job
    from skyc.state import StateDB
    from skyc.task import load_tasks, parse_env_flags, parse_secret_flags

    # The task file is judged first: before the cluster is looked up or locked.
    task_file = load_tasks(task, env=parse_env_flags(env), secrets=parse_secret_flags(secret),
                           require_values=True)
    if len(task_file.tasks) != 1:
        raise UnsupportedFeature(
            f"{task}: holds {len(task_file.tasks)} tasks; exec runs a single task")
    the_task = task_file.tasks[0]
    check_task(the_task)
    spec = job_spec_from_task(the_task)
    info = load_cluster(cluster)
    _check_fits(task, cluster, info, the_task)
    spec = _on_every_host(spec, cluster, info)
    with StateDB() as db:
        recorder = JobRecorder(db, cluster, the_task.name) if db.get_cluster(cluster) else None
        result = run_job(info, spec, on_output=write_output, rerun_setup=rerun_setup,
                         detach=detach, hold_lock=True,
                         on_start=recorder.started if recorder else None)
        if recorder is not None:
            recorder.finished(result)
    if detach and result.ok:
        from skyc.cli.output import err_console
        from skyc.runtime.watch import start_watcher

        start_watcher(info, result.job_id)
        err_console.print(
            f"job {result.job_id} started; follow it with: skyc logs {cluster} "
            f"{result.job_id} --follow", highlight=False, markup=False)
    result.raise_for_status()


def _reconcile(cluster: str, jobs: list[dict[str, Any]]) -> None:
    """What the nodes report, into the state database's unfinished records."""
    from skyc.state import StateDB

    with StateDB() as db:
        if db.get_cluster(cluster) is not None:
            db.reconcile_jobs(cluster, {int(j["job_id"]): str(j["status"]) for j in jobs})


def queue_cmd(cluster: str = typer.Argument(..., help="Name of a running cluster.")) -> None:
    """List the cluster's jobs."""
    from rich.markup import escape
    from rich.table import Table

    from skyc.cli.output import console
    from skyc.runtime import queue

    jobs = queue(load_cluster(cluster))
    _reconcile(cluster, jobs)
    table = Table("ID", "NAME", "SUBMITTED", "STATUS", "NODES", box=None, pad_edge=False)
    for job in jobs:
        when = datetime.datetime.fromtimestamp(job["submitted"] or 0).strftime("%Y-%m-%d %H:%M:%S")
        nodes = ", ".join(f"{n}: {s}" for n, s in job["nodes"].items())
        table.add_row(str(job["job_id"]), escape(job["name"] or "-"), when, job["status"],
                      escape(nodes))
    console.print(table)


def logs_cmd(
    cluster: str = typer.Argument(..., help="Name of a running cluster."),
    job: int | None = typer.Argument(
        None, parser=params.JOB_ID, help="Job id (default: the latest job)."),
    follow: bool = typer.Option(False, "--follow", "-f", help="Keep streaming until it ends."),
) -> None:
    """Print a job's logs from every node, each line prefixed with its node.

    Exits with the job's code once it has ended (0 while it still runs)."""
    from skyc.errors import JobFailed
    from skyc.runtime import queue, tail_logs

    info = load_cluster(cluster)
    code = tail_logs(info, job, follow, on_output=write_output)
    _reconcile(cluster, queue(info))
    if code > 0:
        raise JobFailed(f"job {job if job is not None else '(latest)'} on {cluster} exited "
                        f"with code {code}", code)


def cancel_cmd(
    cluster: str = typer.Argument(..., help="Name of a running cluster."),
    job: int = typer.Argument(..., parser=params.JOB_ID, help="Job id."),
) -> None:
    """Stop a job on every node (its whole process tree)."""
    from skyc.cli.output import console
    from skyc.runtime import cancel, queue

    info = load_cluster(cluster)
    stopped = cancel(info, job)
    _reconcile(cluster, queue(info))
    if stopped:
        console.print(f"job {job} on {cluster}: cancelled", markup=False)
    else:
        console.print(f"job {job} on {cluster} had already finished", markup=False)


def register(app: typer.Typer) -> None:
    app.command("exec")(exec_cmd)
    app.command("queue")(queue_cmd)
    app.command("logs")(logs_cmd)
    app.command("cancel")(cancel_cmd)
