"""``skyc apply``: task YAML to a running (or finished) job, with failover."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from skyc.cli import apply_options
from skyc.cli.options import (
    OPTIMIZE_CHOICES,
    check_choice,
    cpus_option,
    disk_size_option,
    env_file_option,
    gpus_option,
    instance_type_option,
    memory_option,
    num_nodes_option,
    one_infra,
    use_spot_option,
)
from skyc.cli.task_flags import TaskFlags

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from skyc.apply.launch import LaunchOptions, LaunchResult
    from skyc.task import Task, TaskFile

_APPLY_HELP = """Plan, provision (with failover), sync, set up and run a task.

Stages: optimize the placement, compile the cluster's stack, apply it with the
engine (on a capacity or quota error: destroy what the attempt created, block
that zone/region/cloud and re-target the stack to the next best placement),
wait for the nodes, sync the workdir to ~/sky_workdir, run setup (when it
changed) and run on every node, streaming logs prefixed by node. The exit code
is the job's. With --down the cluster is destroyed after the job, whatever its
outcome.

On an existing cluster, a task of another shape (fewer nodes, another instance
type) removes nodes: apply says which nodes and resources go, and refuses while
jobs still run on them unless --allow-reshape (which stops those jobs first).
Job records are kept as they were.
"""


def apply_cmd(
    task_file: Path = apply_options.TASK,
    cluster: str | None = apply_options.CLUSTER,
    yes: bool = apply_options.YES,
    infra: list[str] = apply_options.INFRA,
    catalog: Path | None = apply_options.CATALOG,
    optimize: str = apply_options.OPTIMIZE,
    env: list[str] = apply_options.ENV,
    secret: list[str] = apply_options.SECRET,
    gpus: str | None = gpus_option(),
    cpus: str | None = cpus_option(),
    memory: str | None = memory_option(),
    instance_type: str | None = instance_type_option(),
    disk_size: int | None = disk_size_option(),
    use_spot: bool | None = use_spot_option(),
    num_nodes: int | None = num_nodes_option(),
    env_file: Path | None = env_file_option(),
    down: bool = apply_options.DOWN,
    idle_minutes: float | None = apply_options.IDLE_MINUTES,
    detach: bool = apply_options.DETACH,
    setup: bool = apply_options.SETUP,
    retry_until_up: bool = apply_options.RETRY_UNTIL_UP,
    max_attempts: int = apply_options.MAX_ATTEMPTS,
    timeout: float = apply_options.TIMEOUT,
    lock_timeout: float = apply_options.LOCK_TIMEOUT,
    any_region: bool = apply_options.ANY_REGION,
    allow_reshape: bool = apply_options.ALLOW_RESHAPE,
    engine: str | None = apply_options.ENGINE,
    policy_file: Path | None = apply_options.POLICY,
    allow_policy_violations: bool = apply_options.ALLOW_POLICY_VIOLATIONS,
) -> None:
    from skyc.apply.failover import FailoverPolicy
    from skyc.apply.launch import LaunchOptions

    check_choice("--optimize", optimize, OPTIMIZE_CHOICES)
    where = one_infra(infra)
    base = LaunchOptions(
        down=down, detach=detach, rerun_setup=setup, lock_timeout=lock_timeout,
        allow_reshape=allow_reshape, idle_minutes=idle_minutes,
        failover=FailoverPolicy(max_attempts=max_attempts, timeout_s=timeout,
                                retry_until_up=retry_until_up))
    if _is_saved_plan(task_file, yes):
        _apply_saved(task_file, secret, base, policy_file, allow_policy_violations,
                     ask=None if yes or not sys.stdin.isatty() else _ask_again)
        return
    task_set = _load_apply_tasks(task_file, TaskFlags(
        env=env, env_file=env_file, secret=secret, gpus=gpus, cpus=cpus, memory=memory,
        instance_type=instance_type, disk_size=disk_size, use_spot=use_spot,
        num_nodes=num_nodes))
    opts = replace(base, cluster=cluster, infra=where, catalog_dir=catalog, target=optimize,
                   anywhere=any_region, confirm=None if yes else _confirm, engine=engine)
    _launch_task(task_file, task_set.tasks, opts, policy_file, allow_policy_violations)


def _is_saved_plan(task_file: Path, yes: bool) -> bool:
    """Whether TASK is a plan file saved by `skyc plan -o` (applied as reviewed); any
    other is applied without --yes only when stdin is a terminal, to ask there."""
    from skyc.errors import ConfigError
    from skyc.review.planfile import looks_like_plan_file

    saved = looks_like_plan_file(task_file)
    if not yes and not saved and not sys.stdin.isatty():
        raise ConfigError(
            "refusing to apply without confirmation: stdin is not a terminal",
            hint="pass --yes to apply non-interactively",
        )
    return saved


def _load_apply_tasks(task_file: Path, flags: TaskFlags) -> TaskFile:
    """The task file's tasks, or a one-task file whose run is the command given; their
    warnings said."""
    from skyc.cli.output import print_warning
    from skyc.task import load_tasks
    from skyc.task.inline import TASK_SUFFIXES, inline_task, is_task_file

    overrides = flags.overrides()
    if is_task_file(str(task_file), (*TASK_SUFFIXES, ".skyc")):
        task_set = load_tasks(task_file, env=flags.env_values(), secrets=flags.secrets(),
                              require_values=True, overrides=overrides)
    else:  # `skyc launch -c NAME 'cmd'`, as `sky launch -c NAME 'cmd'`
        task_set = inline_task(str(task_file), env=flags.env_values(),
                               secrets=flags.secrets(), overrides=overrides)
    for warning in task_set.warnings:
        print_warning(warning.render())
    return task_set


def _launch_task(task_file: Path, tasks: Sequence[Task], opts: LaunchOptions,
                 policy_file: Path | None, allow_policy_violations: bool) -> None:
    """Launch under the policy (checked before each attempt, and a constraint of the
    optimizer); the job's exit code is the command's."""
    from skyc.apply.launch import launch
    from skyc.apply.plan_policy import policy_constraint, policy_gate
    from skyc.cli.progress import ConsoleReporter
    from skyc.settings.config import load_config

    opts.admit = policy_gate(policy_file, task_file, tasks, allow_policy_violations)
    opts.allowed = policy_constraint(policy_file, task_file, load_config())
    result = launch(tasks, opts, ConsoleReporter())
    refresh_ssh_config()
    if opts.detach and result.job_id is not None and not result.exit_code:
        from skyc.cli.output import err_console

        err_console.print(
            f"job {result.job_id} started on {result.cluster}; follow it with: "
            f"skyc logs {result.cluster} {result.job_id} --follow",
            highlight=False,
        )
    _exit_if_failed(result)


def _exit_if_failed(result: LaunchResult) -> None:
    """A job that failed: say how, and exit with its code."""
    if result.exit_code:
        from skyc.cli.output import print_error
        from skyc.errors import JobFailed

        print_error(JobFailed(result.failure or "the job failed", result.exit_code))
        raise typer.Exit(result.exit_code)


def _apply_saved(path: Path, secret: list[str], base: LaunchOptions,
                 policy_file: Path | None, allow: bool,
                 ask: Callable[[str], bool] | None = None) -> None:
    """``skyc apply PLANFILE``: exactly the reviewed plan, without asking again; when
    every placement it lists failed, ``ask`` (None: stop) says whether to go on."""
    from skyc.apply.saved_plan import apply_saved_plan
    from skyc.cli.progress import ConsoleReporter
    from skyc.task import parse_secret_flags

    result = apply_saved_plan(path, secrets=parse_secret_flags(secret), options=base,
                              policy_file=policy_file, allow_policy_violations=allow,
                              ask=ask, reporter=ConsoleReporter())
    refresh_ssh_config()
    _exit_if_failed(result)


def refresh_ssh_config() -> None:
    """$SKYC_HOME/ssh/config, for `ssh CLUSTER` (see `skyc ssh-config`)."""
    from skyc.runtime.sshconfig import write_config
    from skyc.settings.config import skyc_home

    try:
        write_config(skyc_home())
    except OSError as exc:
        from skyc.cli.output import print_warning

        print_warning(f"could not write the SSH config for `ssh CLUSTER`: {exc}")


def _ask_again(question: str) -> bool:
    from skyc.cli.output import err_console

    err_console.print(question, soft_wrap=True, markup=False, highlight=False)
    return typer.confirm("Fail over outside the reviewed plan?", default=False, err=True)


def _confirm(summary: str) -> bool:
    from skyc.cli.output import err_console

    err_console.print(summary)
    return typer.confirm("Apply these changes?", default=False, err=True)


def register(app: typer.Typer) -> None:
    app.command("apply", help=_APPLY_HELP)(apply_cmd)
    app.command("launch", help="SkyPilot's name for apply (the same command).\n\n"
                + _APPLY_HELP)(apply_cmd)
