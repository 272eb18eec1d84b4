"""``skyc stop`` / ``skyc start`` (the cluster's stack re-applied with its nodes stopped
or running) and ``skyc autostop`` (stop or tear down an idle cluster, decided on its
head node)."""

from __future__ import annotations

import typer

from skyc.cli import params


def autostop_cmd(
    cluster: str = typer.Argument(..., metavar="CLUSTER", help="Name of a running cluster."),
    idle_minutes: float | None = typer.Option(
        None, "-i", "--idle-minutes", metavar="MINUTES", parser=params.IDLE_MINUTES,
        help="Idle minutes (no job running or queued, no SSH session) before it acts."),
    down: bool = typer.Option(False, "--down", help="Tear the cluster down instead of "
                              "stopping it."),
    cancel: bool = typer.Option(False, "--cancel", help="Turn autostop off."),
    wait_for: str | None = typer.Option(
        None, "--wait-for", metavar="jobs_and_ssh|jobs|none",
        help="jobs_and_ssh (default), jobs, or none (a hard limit)."),
) -> None:
    """Set (or cancel) autostop: the node agent on the head watches for idleness and
    acts from there, so it works with this machine off (see the README per target)."""
    from skyc.cli.cmd_jobs import load_cluster
    from skyc.cli.output import print_line
    from skyc.errors import ConfigError
    from skyc.launch import plan_cluster_autostop, set_cluster_autostop
    from skyc.runtime.autostop import cancel_autostop
    from skyc.state import StateDB

    if cancel == (idle_minutes is not None):
        raise ConfigError("give -i N (with --down to tear down) or --cancel",
                          hint=f"e.g. skyc autostop {cluster} -i 30")
    if wait_for not in (None, "jobs_and_ssh", "jobs", "none"):
        raise ConfigError(f"--wait-for {wait_for}: expected jobs_and_ssh, jobs or none")
    info = load_cluster(cluster)
    with StateDB() as db:
        if cancel:
            cancel_autostop(info)
            db.add_event(cluster, "autostop", "autostop cancelled", {"cancelled": True})
            print_line(f"cluster {cluster}: autostop cancelled")
            return
        assert idle_minutes is not None
        plan = plan_cluster_autostop(info, down)
        set_cluster_autostop(info, plan, (idle_minutes, down, wait_for), db)
    print_line(f"cluster {cluster}: {'torn down' if down else 'stopped'} after "
               f"{idle_minutes:g} idle minute(s)")


def stop_cmd(
    cluster: str = typer.Argument(..., metavar="CLUSTER", help="Name of a running cluster."),
    lock_timeout: float = typer.Option(
        600.0, "--lock-timeout", metavar="SECONDS", parser=params.LOCK_TIMEOUT,
        help="Seconds to wait for another skyc on this cluster (0: do not wait)."),
) -> None:
    """Stop the cluster's nodes, keeping their disks: the same stack, re-applied with
    the nodes stopped (where the target can; refused for spot, local, SSH pools, TPU VMs).
    Jobs on it are ended first."""
    from skyc.cli.output import print_line
    from skyc.cli.report import ConsoleReporter
    from skyc.power import stop_cluster

    if stop_cluster(cluster, ConsoleReporter(), lock_timeout):
        print_line(f"cluster {cluster}: STOPPED (disks kept); start it with: skyc start "
                   f"{cluster}")
    else:
        print_line(f"cluster {cluster} is already stopped")


def start_cmd(
    cluster: str = typer.Argument(..., metavar="CLUSTER", help="Name of a stopped cluster."),
    lock_timeout: float = typer.Option(
        600.0, "--lock-timeout", metavar="SECONDS", parser=params.LOCK_TIMEOUT,
        help="Seconds to wait for another skyc on this cluster (0: do not wait)."),
) -> None:
    """Start a stopped cluster: its stack re-applied with the nodes running."""
    from skyc.cli.output import print_line
    from skyc.cli.report import ConsoleReporter
    from skyc.power import start_cluster

    info = start_cluster(cluster, ConsoleReporter(), lock_timeout)
    if info is None:
        print_line(f"cluster {cluster} is not stopped")
        return
    print_line(f"cluster {cluster}: UP ({len(info.nodes)} node(s))")


def register(app: typer.Typer) -> None:
    app.command("autostop")(autostop_cmd)
    app.command("stop")(stop_cmd)
    app.command("start")(start_cmd)
