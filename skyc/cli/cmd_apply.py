"""``skyc apply``: task YAML to a running (or finished) job, with failover."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from skyc.cli import params
from skyc.cli.options import (
    INFRA_HELP,
    OPTIMIZE_CHOICES,
    check_choice,
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

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from skyc.apply.launch import LaunchOptions
    from skyc.optimizer.plan import Placement
    from skyc.task import Task

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
    task_file: Path = typer.Argument(
        ..., metavar="TASK|COMMAND",
        help="Task YAML, a plan file saved by `skyc plan -o FILE`, or a command in quotes "
        "('python train.py', run as the task's run section)."),
    cluster: str | None = typer.Option(
        None, "-c", "--cluster", metavar="CLUSTER",
        help="Cluster name (default: the task's name)."
    ),
    yes: bool = typer.Option(False, "-y", "--yes", help="Apply without asking."),
    infra: list[str] = typer.Option([], "--infra", metavar="INFRA", help=INFRA_HELP),
    catalog: Path | None = typer.Option(None, "--catalog", metavar="DIR",
                                        help="Catalog dir (<cloud>/vms.csv)."),
    optimize: str = typer.Option("cost", "--optimize", metavar="cost|time",
                                 help="cost (cheapest) or time (fastest)."),
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
    down: bool = typer.Option(False, "--down", help="Destroy the cluster after the job "
                              "(with -i: once it has been idle that long)."),
    idle_minutes: float | None = typer.Option(
        None, "-i", "--idle-minutes-to-autostop", metavar="MINUTES", parser=params.IDLE_MINUTES,
        help="Autostop: stop (with --down: tear down) the cluster after N idle minutes; "
        "decided on the head node."),
    detach: bool = typer.Option(False, "-d", "--detach",
                                help="Return once the job has started."),
    setup: bool = typer.Option(False, "--setup", help="Run setup again even if unchanged."),
    retry_until_up: bool = typer.Option(
        False, "--retry-until-up", help="Keep cycling through placements (with backoff)."
    ),
    max_attempts: int = typer.Option(
        8, "--max-attempts", metavar="N", parser=params.ATTEMPTS,
        help="Failover attempt limit (1-1000)."
    ),
    timeout: float = typer.Option(
        3600.0, "--timeout", metavar="SECONDS", parser=params.TIMEOUT,
        help="Provisioning time limit, seconds (more than 0).",
    ),
    lock_timeout: float = typer.Option(
        600.0, "--lock-timeout", metavar="SECONDS", parser=params.LOCK_TIMEOUT,
        help="Seconds to wait for another skyc on this cluster (0: do not wait).",
    ),
    any_region: bool = typer.Option(
        False, "--any-region", help="Let an existing cluster move out of its region."
    ),
    allow_reshape: bool = typer.Option(
        False, "--allow-reshape", help="Remove nodes of an existing cluster even while "
        "jobs run there (those jobs are stopped first)."),
    engine: str | None = typer.Option(
        None, "--engine", metavar="terraform|pulumi",
        help="terraform or pulumi (default: the config's, else the "
        "target's first)."),
    policy_file: Path | None = typer.Option(
        None, "--policy", metavar="FILE",
        help="Policy file (default: skyc-policy.yaml beside the task, else the config's "
        "policy:); checked before every attempt."),
    allow_policy_violations: bool = typer.Option(
        False, "--allow-policy-violations",
        help="Apply even when the policy is violated (recorded in the cluster's events)."),
) -> None:
    from skyc.apply.failover import FailoverPolicy
    from skyc.apply.launch import LaunchOptions, launch
    from skyc.cli.plan_stacks import policy_constraint
    from skyc.cli.report import ConsoleReporter
    from skyc.errors import ConfigError
    from skyc.settings.config import load_config
    from skyc.task import load_tasks, parse_secret_flags

    check_choice("--optimize", optimize, OPTIMIZE_CHOICES)
    where = one_infra(infra)
    from skyc.review.planfile import looks_like_plan_file

    saved = looks_like_plan_file(task_file)
    if not yes and not saved and not sys.stdin.isatty():
        raise ConfigError(
            "refusing to apply without confirmation: stdin is not a terminal",
            hint="pass --yes to apply non-interactively",
        )
    if saved:
        _apply_saved(task_file, secret, LaunchOptions(
            down=down, detach=detach, rerun_setup=setup, lock_timeout=lock_timeout,
            allow_reshape=allow_reshape, idle_minutes=idle_minutes,
            failover=FailoverPolicy(max_attempts=max_attempts, timeout_s=timeout,
                                    retry_until_up=retry_until_up)),
            policy_file, allow_policy_violations,
            ask=None if yes or not sys.stdin.isatty() else _ask_again)
        return
    from skyc.task.inline import TASK_SUFFIXES, inline_task, is_task_file
    from skyc.task.overrides import resource_overrides

    overrides = resource_overrides(gpus=gpus, cpus=cpus, memory=memory,
                                   instance_type=instance_type, disk_size=disk_size,
                                   use_spot=use_spot, num_nodes=num_nodes)
    if is_task_file(str(task_file), (*TASK_SUFFIXES, ".skyc")):
        task_set = load_tasks(task_file, env=env_values(env_file, env),
                              secrets=parse_secret_flags(secret), require_values=True,
                              overrides=overrides)
    else:  # `skyc launch -c NAME 'cmd'`, as `sky launch -c NAME 'cmd'`
        task_set = inline_task(str(task_file), env=env_values(env_file, env),
                               secrets=parse_secret_flags(secret), overrides=overrides)
    from skyc.cli.output import print_warning

    for warning in task_set.warnings:
        print_warning(warning.render())
    opts = LaunchOptions(
        cluster=cluster, infra=where, catalog_dir=catalog, target=optimize, down=down,
        detach=detach, rerun_setup=setup, lock_timeout=lock_timeout, anywhere=any_region,
        allow_reshape=allow_reshape,
        failover=FailoverPolicy(
            max_attempts=max_attempts, timeout_s=timeout, retry_until_up=retry_until_up
        ),
        confirm=None if yes else _confirm,
        engine=engine,
        idle_minutes=idle_minutes,
        admit=_policy_gate(policy_file, task_file, task_set.tasks, allow_policy_violations),
        allowed=policy_constraint(policy_file, task_file, load_config()),
    )
    result = launch(task_set.tasks, opts, ConsoleReporter())
    refresh_ssh_config()
    if detach and result.job_id is not None and not result.exit_code:
        from skyc.cli.output import err_console

        err_console.print(
            f"job {result.job_id} started on {result.cluster}; follow it with: "
            f"skyc logs {result.cluster} {result.job_id} --follow",
            highlight=False,
        )
    if result.exit_code:
        from skyc.cli.output import print_error
        from skyc.errors import JobFailed

        print_error(JobFailed(result.failure or "the job failed", result.exit_code))
        raise typer.Exit(result.exit_code)


def _policy_gate(explicit: Path | None, task_file: Path, tasks: Sequence[Task], allow: bool
                 ) -> Callable[[str, Placement], None] | None:
    """The policy check before each attempt (None: no policy applies)."""
    from skyc.review.admit import policy_gate
    from skyc.review.policy import find_policy, load_policy
    from skyc.settings.config import load_config

    path = find_policy(explicit, task_file, load_config().policy)
    if path is None or len(tasks) != 1:
        return None
    return policy_gate(load_policy(path), path, tasks[0], allow)


def _apply_saved(path: Path, secret: list[str], base: LaunchOptions,
                 policy_file: Path | None, allow: bool,
                 ask: Callable[[str], bool] | None = None) -> None:
    """``skyc apply PLANFILE``: exactly the reviewed plan, without asking again; when
    every placement it lists failed, ``ask`` (None: stop) says whether to go on."""
    from skyc.apply.launch import launch
    from skyc.cli.report import ConsoleReporter
    from skyc.review.planfile import read
    from skyc.review.saved_apply import launch_options, load_tasks_of
    from skyc.settings.config import load_config
    from skyc.task import parse_secret_flags

    plan = read(path)
    tasks = load_tasks_of(plan, parse_secret_flags(secret))
    opts = launch_options(path, plan, tasks, load_config(), base)
    opts.admit = _policy_gate(policy_file, Path(plan.tasks[0].file), tasks, allow)
    if opts.reviewed is not None:
        opts.reviewed.ask = ask
    result = launch(tasks, opts, ConsoleReporter())
    refresh_ssh_config()
    if result.exit_code:
        from skyc.cli.output import print_error
        from skyc.errors import JobFailed

        print_error(JobFailed(result.failure or "the job failed", result.exit_code))
        raise typer.Exit(result.exit_code)


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
