"""``skyc exec``, ``skyc queue``, ``skyc logs`` and ``skyc cancel``: jobs on a running cluster."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from skyc.cli import params

if TYPE_CHECKING:
    from skyc.nodes import ClusterInfo
    from skyc.runtime import JobResult


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


def _record(cluster: str, name: str | None, result: JobResult) -> None:
    """The job in the state database too, when skyc launched this cluster."""
    from skyc.launch import record_job
    from skyc.state import StateDB

    with StateDB() as db:
        if db.get_cluster(cluster) is not None:
            record_job(db, cluster, name, result)


def _print_line(label: str, line: str) -> None:
    from rich.markup import escape

    from skyc.cli.output import console

    console.print(f"[cyan]{escape(label)}[/] {escape(line)}", soft_wrap=True, highlight=False)


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
    """Sync the task's workdir and run its setup and run commands on every node."""
    from skyc.errors import ConfigError, UnsupportedFeature
    from skyc.runtime import job_spec_from_task, run_job
    from skyc.task import load_tasks, parse_env_flags, parse_secret_flags

    info = load_cluster(cluster)
    task_file = load_tasks(task, env=parse_env_flags(env), secrets=parse_secret_flags(secret),
                           require_values=True)
    if len(task_file.tasks) != 1:
        raise UnsupportedFeature(
            f"{task}: holds {len(task_file.tasks)} tasks; exec runs a single task")
    the_task = task_file.tasks[0]
    from skyc.preflight import check_task

    check_task(the_task)
    if the_task.num_nodes > len(info.nodes):
        raise ConfigError(
            f"{task}: num_nodes is {the_task.num_nodes}, but cluster '{cluster}' has "
            f"{len(info.nodes)} node(s)",
            hint="use `skyc apply` to grow the cluster, or lower num_nodes",
        )
    spec = job_spec_from_task(the_task)
    result = run_job(info, spec, on_line=_print_line, rerun_setup=rerun_setup, detach=detach)
    _record(cluster, the_task.name, result)
    if detach and result.ok:
        from skyc.cli.output import console

        console.print(
            f"job {result.job_id} started; follow it with: skyc logs {cluster} "
            f"{result.job_id} --follow")
    result.raise_for_status()


def queue_cmd(cluster: str = typer.Argument(..., help="Name of a running cluster.")) -> None:
    """List the cluster's jobs."""
    from rich.table import Table

    from skyc.cli.output import console
    from skyc.runtime import queue

    jobs = queue(load_cluster(cluster))
    table = Table("ID", "NAME", "SUBMITTED", "STATUS", "NODES", box=None, pad_edge=False)
    for job in jobs:
        when = datetime.datetime.fromtimestamp(job["submitted"] or 0).strftime("%Y-%m-%d %H:%M:%S")
        nodes = ", ".join(f"{n}: {s}" for n, s in job["nodes"].items())
        table.add_row(str(job["job_id"]), job["name"] or "-", when, job["status"], nodes)
    console.print(table)


def logs_cmd(
    cluster: str = typer.Argument(..., help="Name of a running cluster."),
    job: int | None = typer.Argument(
        None, parser=params.JOB_ID, help="Job id (default: the latest job)."),
    follow: bool = typer.Option(False, "--follow", "-f", help="Keep streaming until it ends."),
) -> None:
    """Print a job's logs from every node, each line prefixed with its node."""
    from skyc.errors import JobFailed
    from skyc.runtime import tail_logs

    code = tail_logs(load_cluster(cluster), job, follow, on_line=_print_line)
    if follow and code > 0:
        raise JobFailed(f"job {job if job is not None else '(latest)'} exited with code {code}",
                        code)


def cancel_cmd(
    cluster: str = typer.Argument(..., help="Name of a running cluster."),
    job: int = typer.Argument(..., parser=params.JOB_ID, help="Job id."),
) -> None:
    """Stop a job on every node (its whole process tree)."""
    from skyc.cli.output import console
    from skyc.runtime import cancel

    if cancel(load_cluster(cluster), job):
        console.print(f"job {job} on {cluster}: cancelled")
    else:
        console.print(f"job {job} on {cluster} had already finished")


def register(app: typer.Typer) -> None:
    app.command("exec")(exec_cmd)
    app.command("queue")(queue_cmd)
    app.command("logs")(logs_cmd)
    app.command("cancel")(cancel_cmd)
