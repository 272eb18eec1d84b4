"""``skyc jobs ...``: managed jobs, supervised by a controller that recovers them."""

from __future__ import annotations

import datetime
import functools
import json
import sys
import time
from pathlib import Path
from typing import Any

import typer

from skyc.cli import params
from skyc.cli.options import (
    INFRA_HELP,
    all_users_option,
    cpus_option,
    disk_size_option,
    env_file_option,
    env_values,
    gpus_option,
    instance_type_option,
    memory_option,
    num_nodes_option,
    one_infra,
    use_spot_option,
)
from skyc.cli.output import json_errors
from skyc.schemas import versions

jobs_app = typer.Typer(
    help="Managed jobs: a controller provisions the cluster (with failover), runs the task, "
    "recovers it on preemption or node loss, and tears the cluster down when it ends.",
    no_args_is_help=True, add_completion=False, rich_markup_mode=None,
)


def _write(data: bytes) -> None:
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


@jobs_app.command("launch")
def launch_cmd(
    task: str = typer.Argument(
        ..., metavar="TASK|COMMAND",
        help="Task YAML (several documents: a pipeline), or a command in quotes "
        "('python train.py', run as the task's run section)."),
    name: str | None = typer.Option(None, "--name", "-n", metavar="NAME", help="The job's name."),
    yes: bool = typer.Option(False, "-y", "--yes", help="Launch without asking."),
    detach: bool = typer.Option(False, "-d", "--detach", help="Return once it is submitted."),
    infra: list[str] = typer.Option([], "--infra", metavar="INFRA", help=INFRA_HELP),
    env: list[str] = typer.Option([], "--env", metavar="KEY[=VAL]",
                                  help="KEY=VAL (or KEY, from this environment)."),
    secret: list[str] = typer.Option([], "--secret", metavar="KEY[=VAL]",
                                     help="KEY=VAL, or KEY from this environment."),
    gpus: str | None = gpus_option(),
    cpus: str | None = cpus_option(),
    memory: str | None = memory_option(),
    instance_type: str | None = instance_type_option(),
    disk_size: int | None = disk_size_option(),
    use_spot: bool | None = use_spot_option(),
    num_nodes: int | None = num_nodes_option(),
    env_file: Path | None = env_file_option(),
    values_stdin: bool = typer.Option(False, "--values-stdin", hidden=True,
                                      help="envs and secrets as JSON on stdin (forwarded)."),
) -> None:
    """Hand a task to a managed-job controller; without -d, follow its logs to the end."""
    from skyc.cli.jobs_launch import handed_task
    from skyc.jobs.remote import configured, read_values
    from skyc.task import parse_secret_flags
    from skyc.task.overrides import resource_overrides

    envs, secrets = env_values(env_file, env), parse_secret_flags(secret)
    owner = None
    if values_stdin:  # a launch forwarded to this machine, the jobs controller cluster
        given = read_values(sys.stdin.read())
        envs.update(given["envs"])
        secrets.update(given["secrets"])
        owner = given["owner"].get("name")  # who submitted it to the controller
    remote = None if values_stdin else configured()
    overrides = resource_overrides(gpus=gpus, cpus=cpus, memory=memory,
                                   instance_type=instance_type, disk_size=disk_size,
                                   use_spot=use_spot, num_nodes=num_nodes)
    path, secrets = handed_task(task, envs=envs, secrets=secrets, overrides=overrides,
                                infra=one_infra(infra))
    _confirm_launch(yes, task)
    job_id = _submit(remote, path, name, envs, secrets, owner)
    if detach:
        typer.echo(str(job_id))
        return
    if remote is not None:
        remote.stream(["jobs", "logs", str(job_id), "--follow"], _write)
        job = next((j for j in remote.queue() if j["id"] == job_id), {})
        _print_end(job_id, job.get("status", "UNKNOWN"), job.get("failure"))
        return
    _follow_to_end(job_id)


def _confirm_launch(yes: bool, task: str) -> None:
    if yes:
        return
    from skyc.errors import ConfigError

    if not sys.stdin.isatty():
        raise ConfigError("refusing to launch without confirmation: stdin is not a terminal",
                          hint="pass --yes to launch non-interactively")
    if not typer.confirm(f"Launch a managed job of {task}?", default=False, err=True):
        raise typer.Exit(1)


def _submit(remote: Any, path: Path, name: str | None, envs: dict[str, str],
            secrets: dict[str, str | None], owner: str | None = None) -> int:
    """Hand the task to the controller (the jobs controller cluster's, when the config
    has one); the job's id, announced on stderr."""
    from skyc.cli.output import err_console
    from skyc.jobs import launch

    if remote is not None:
        from skyc.cli.progress import ConsoleReporter

        job_id = int(remote.launch(path, name=name, envs=envs, secrets=secrets,
                                   reporter=ConsoleReporter()))
    else:
        job_id = launch(path, name=name, envs=envs, secrets=secrets, owner=owner)
    err_console.print(f"managed job {job_id} submitted; follow it with: skyc jobs logs "
                      f"{job_id} --follow", highlight=False, markup=False)
    return job_id


def _print_end(job_id: int, status: str, failure: str | None) -> None:
    from skyc.cli.output import print_line

    print_line(f"managed job {job_id}: {status}" + (f" ({failure})" if failure else ""),
               err=True)
    if status != "SUCCEEDED":
        raise typer.Exit(1)


def _forwarded(remote: Any, args: list[str]) -> None:
    """``skyc ARGS`` run on the jobs controller cluster: its output and exit code."""
    res = remote.stream(args, _write)
    sys.stderr.buffer.write(res.stderr)
    sys.stderr.flush()
    if res.exit_code != 0:
        raise typer.Exit(res.exit_code)


def _follow_to_end(job_id: int) -> None:
    from skyc.cli.output import print_line
    from skyc.jobs import stream_logs

    job = stream_logs(job_id, True, _write)
    print_line(f"managed job {job_id}: {job.status}"
               + (f" ({job.failure})" if job.failure else ""), err=True)
    if job.status != "SUCCEEDED":
        raise typer.Exit(1)


@jobs_app.command("queue")
@functools.partial(json_errors, document="jobs")
def queue_cmd(
    fmt: str = typer.Option("table", "--format", metavar="table|json", help="table or json."),
    all_users: bool = all_users_option(),
) -> None:
    """Managed jobs: status, recoveries, restarts, cost so far, and (json) the trail
    (yours; everyone's with -u)."""
    from skyc.errors import ConfigError

    if fmt not in ("table", "json"):
        raise ConfigError(f"--format {fmt}: expected 'table' or 'json'")
    from skyc.jobs.remote import configured

    remote = configured()
    if remote is not None:  # the jobs controller cluster's queue: the caller's, or all
        from skyc.state.database import caller
        from skyc.state.records import owned_by

        mine = None if all_users else caller()
        rows = [{"owner": None, **row} for row in remote.queue()
                if mine is None or owned_by(row.get("owner"), mine)]
    else:
        _revive()
        rows = _local_jobs(all_users)
    if fmt == "json":  # `skyc schema jobs`
        typer.echo(json.dumps({"format_version": versions.JOBS, "jobs": rows}, indent=2,
                              sort_keys=True))
        return
    _print_table(rows, owners=all_users)


def _local_jobs(all_users: bool) -> list[dict[str, Any]]:
    """The managed jobs this state records: the caller's (and those recorded before
    owners were), everyone's with ``all_users``."""
    from skyc.jobs import ManagedJobStore

    store = ManagedJobStore()
    try:
        mine = None if all_users else store.db.caller()
        return [_job_doc(store, job) for job in store.all_jobs(owner=mine)]
    finally:
        store.close()


def _job_doc(store: Any, job: Any) -> dict[str, Any]:
    doc: dict[str, Any] = job.model_dump(
        mode="json", exclude={"spec", "lease_owner", "cancel_requested"})
    from skyc.jobs.lease import controller_alive

    doc["strategy"] = job.spec.recovery.strategy
    # An unfinished job whose lease has lapsed has no controller: `skyc jobs controller`.
    doc["controller"] = None if job.done else ("alive" if controller_alive(job) else "gone")
    doc["cost"] = round(store.cost(job.id), 6)
    doc["trail"] = [e.model_dump(mode="json", exclude={"job"}) for e in store.trail(job.id)]
    doc["attempts"] = [a.model_dump(mode="json", exclude={"job"})
                       for a in store.attempts(job.id)]
    return doc


def _print_table(rows: list[dict[str, Any]], owners: bool = False) -> None:
    """The queue, fitted to the terminal: lesser columns (controller, restarts, cost,
    submitted time, recoveries) go first, so no cell is ever cut short; ``owners``:
    with an OWNER column."""
    from skyc.cli.output import fitted_table, print_table

    columns = ("ID", "NAME", *(("OWNER",) if owners else ()), "STATUS", "SUBMITTED",
               "DURATION", "RECOVERIES", "RESTARTS", "CLUSTER", "COST", "CONTROLLER")
    now = time.time()
    cells = []
    for r in rows:
        when = datetime.datetime.fromtimestamp(r["submitted_at"]).strftime("%Y-%m-%d %H:%M")
        start = r["started_at"]
        took = "-" if start is None else f"{(r['ended_at'] or now) - start:.0f}s"
        cells.append((str(r["id"]), r["name"] or "-",
                      *((r.get("owner") or "-",) if owners else ()), r["status"], when, took,
                      str(r["recoveries"]), str(r["restarts"]), r["cluster"] or "-",
                      f"${r['cost']:.4f}", r["controller"] or "-"))
    print_table(fitted_table(None, columns, cells, right=("ID", "COST"),
                             drop=("CONTROLLER", "RESTARTS", "COST", "SUBMITTED",
                                   "RECOVERIES", "CLUSTER")))


@jobs_app.command("logs")
def logs_cmd(
    job_id: int = typer.Argument(..., metavar="JOB_ID", parser=params.JOB_ID,
                                 help="Managed job id."),
    follow: bool = typer.Option(False, "--follow", "-f", help="Until the job ends."),
    controller: bool = typer.Option(False, "--controller", help="The controller's log."),
) -> None:
    """A managed job's output (every run, recoveries included), or its controller's log."""
    from skyc.jobs.remote import configured
    from skyc.jobs.submit import follow_controller_log, stream_logs

    remote = configured()
    if remote is not None:
        _forwarded(remote, ["jobs", "logs", str(job_id), *(["--follow"] if follow else []),
                            *(["--controller"] if controller else [])])
        return
    _revive()
    if controller:
        follow_controller_log(job_id, follow, _write)
        return
    job = stream_logs(job_id, follow, _write)
    if follow and job.status != "SUCCEEDED":
        raise typer.Exit(1)


@jobs_app.command("cancel")
def cancel_cmd(
    job_ids: list[int] = typer.Argument(None, metavar="JOB_ID", help="Managed job ids."),
    all_jobs: bool = typer.Option(False, "--all", "-a", help="Every unfinished job."),
) -> None:
    """Cancel managed jobs: the run is stopped and the cluster torn down."""
    from skyc.cli.output import print_line
    from skyc.errors import ConfigError
    from skyc.jobs import ManagedJobStore, cancel

    if bool(job_ids) == all_jobs:
        raise ConfigError("give job ids or --all (not both)",
                          hint="see the jobs with: skyc jobs queue")
    for job_id in job_ids or []:
        if job_id < 1:
            raise ConfigError(f"job id {job_id}: expected 1 or more")
    from skyc.jobs.remote import configured

    remote = configured()
    if remote is not None:
        _forwarded(remote, ["jobs", "cancel", *(str(i) for i in job_ids or []),
                            *(["--all"] if all_jobs else [])])
        return
    if all_jobs:
        store = ManagedJobStore()
        try:
            job_ids = [j.id for j in store.all_jobs() if not j.done]
        finally:
            store.close()
    for job_id, status in cancel(list(job_ids)):
        print_line(f"managed job {job_id}: {status}")
    _revive()


@jobs_app.command("controller")
def controller_cmd(
    job_id: int | None = typer.Argument(None, metavar="JOB_ID", parser=params.JOB_ID,
                                        help="Supervise only this job, in the foreground."),
    restart: bool = typer.Option(False, "--restart",
                                 help="Start the controller in the background if none runs "
                                 "(after it died), and return."),
) -> None:
    """The managed-jobs controller: one process for this SKYC_HOME supervises every
    managed job, each in a thread of its own, under the job's lease. `skyc jobs launch`
    starts it (detached) and hands it each job and its secrets over a 0600 socket; it
    takes over unfinished jobs whose controller died once their lease has expired, and
    exits after SKYC_JOBS_IDLE_S (60) seconds with no job. Any `skyc jobs` command
    restarts it when jobs are left without one; --restart does so explicitly.

    With JOB_ID: supervise that one job here until it ends (secrets as JSON on stdin:
    {"secrets": {"NAME": "value"}})."""
    if job_id is None:
        _controller_daemon(restart)
        return
    from skyc.jobs import supervise
    from skyc.jobs.controller import managed_log_dir
    from skyc.jobs.submit import CONTROLLER_LOG, read_secrets

    given = read_secrets("" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.read())
    log_dir = managed_log_dir(job_id)
    log_dir.mkdir(parents=True, exist_ok=True)
    with (log_dir / CONTROLLER_LOG).open("a", encoding="utf-8") as log:
        status = supervise(job_id, given["secrets"], log, given["envs"])
    if status != "SUCCEEDED":
        raise typer.Exit(1)


def _controller_daemon(restart: bool) -> None:
    from skyc.cli.output import print_line
    from skyc.errors import AlreadyRunning
    from skyc.jobs.daemon import serve
    from skyc.jobs.starter import ensure_running

    if restart:
        pid, started = ensure_running()
        print_line(f"managed-jobs controller {'started' if started else 'already runs'} "
                   f"(pid {pid})")
        return
    try:
        serve()
    except AlreadyRunning as exc:
        print_line(exc.message)


def _revive() -> None:
    """Restart the managed-jobs controller when unfinished jobs have none (one line)."""
    from skyc.cli.output import print_line
    from skyc.jobs.starter import revive

    revived = revive()
    if revived is not None:
        pid, count = revived
        print_line(f"managed-jobs controller was not running: restarted it (pid {pid}) for "
                   f"{count} unfinished job(s)", err=True)


@jobs_app.command("controller-up")
def controller_up_cmd() -> None:
    """Bring up the jobs controller cluster (config jobs.controller): its stack is applied
    again and skyc reinstalled there (a controller that does not answer comes back)."""
    from skyc.cli.output import print_line
    from skyc.cli.progress import ConsoleReporter
    from skyc.errors import ConfigError
    from skyc.jobs.remote import configured

    remote = configured()
    if remote is None:
        raise ConfigError("the config has no jobs.controller section: managed jobs' "
                          "controllers run on this machine",
                          hint="add jobs: {controller: {infra: ...}} to $SKYC_HOME/config.yaml")
    remote.up(ConsoleReporter(), reapply=True)
    print_line(remote.name)


def register(app: typer.Typer) -> None:
    app.add_typer(jobs_app, name="jobs")
