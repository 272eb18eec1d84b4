"""``skyc stop`` / ``skyc start`` (the cluster's stack re-applied with its nodes stopped
or running) and ``skyc autostop`` (stop or tear down an idle cluster, decided on its
head node)."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from typing import Any

import typer

from skyc.cli import params

# The commands whose hold on a cluster's lock an interrupt ends cleanly (as Ctrl-C does).
_INTERRUPTIBLE = frozenset({"apply", "launch"})


def _holder_words(holder: dict[str, Any]) -> list[str]:
    words = str(holder.get("command") or "").split()
    if words and words[0] in ("__main__.py", "skyc"):
        words[0] = "skyc"
    return words


def lock_notice(cluster: str, timeout: float, holder: dict[str, Any] | None) -> str:
    """What a command about to wait for cluster ``cluster``'s lock says: who holds it,
    since when, how long it waits, and how to stop waiting or interrupt the holder."""
    if not holder:
        return (f"waiting up to {timeout:g}s for the lock on cluster {cluster}, held by "
                "another skyc process; Ctrl-C to stop waiting")
    words = _holder_words(holder)
    pid = holder.get("pid")
    host = holder.get("host")
    here = host is None or host == socket.gethostname()
    text = f"waiting up to {timeout:g}s for the lock on cluster {cluster}, held by "
    if holder.get("who"):  # a team's state: who holds it, on which machine
        text += f"{holder['who']}" + ("" if "@" in str(holder["who"]) else f"@{host}") + " "
    text += f"`{' '.join(words)}` (pid {pid})" if words else f"pid {pid}"
    since = holder.get("since")
    if isinstance(since, (int, float)):
        stamp = time.strftime("%H:%M:%S", time.localtime(since))
        text += f" since {stamp} ({max(0.0, time.time() - since):.0f}s ago)"
    text += "; Ctrl-C to stop waiting"
    if here and len(words) > 1 and words[1] in _INTERRUPTIBLE and isinstance(pid, int):
        text += f", or interrupt that {words[1]} with: kill -INT {pid}"
    return text


def lock_waiter(cluster: str, timeout: float) -> Callable[[str], None]:
    """``on_wait`` for :func:`skyc.state.locks.cluster_lock`: says who holds the lock."""
    def say(_message: str) -> None:
        from skyc.cli.output import print_line
        from skyc.state.locks import lock_path, read_holder

        print_line(lock_notice(cluster, timeout, read_holder(lock_path(cluster))), err=True)

    return say


def say_if_locked(cluster: str, timeout: float) -> None:
    """Before a command that takes the cluster's lock without saying so: if another
    skyc holds it now, say who and what the wait is."""
    from skyc.state.locks import lock_held

    if timeout > 0 and lock_held(cluster):
        lock_waiter(cluster, timeout)("")


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
    from skyc.apply.launch import plan_cluster_autostop, set_cluster_autostop
    from skyc.cli.cmd_jobs import load_cluster
    from skyc.cli.output import print_line
    from skyc.errors import ConfigError
    from skyc.runtime.autostop import cancel_autostop
    from skyc.state.database import StateDB

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
    waits = {None: "", "jobs_and_ssh": " (no job running and no SSH session)",
             "jobs": " (no job running)", "none": " (whatever runs)"}[wait_for]
    print_line(f"cluster {cluster}: autostop set: it will be {'torn down' if down else 'stopped'}"
               f" once idle for {idle_minutes:g} minute(s){waits}; cancel with: "
               f"skyc autostop {cluster} --cancel")


def stop_cmd(
    cluster: str = typer.Argument(..., metavar="CLUSTER", help="Name of a running cluster."),
    lock_timeout: float = typer.Option(
        600.0, "--lock-timeout", metavar="SECONDS", parser=params.LOCK_TIMEOUT,
        help="Seconds to wait for another skyc on this cluster (0: do not wait)."),
    yes: bool = typer.Option(False, "--yes", "-y",
                             help="Stop another user's cluster without asking."),
) -> None:
    """Stop the cluster's nodes, keeping their disks: the same stack, re-applied with
    the nodes stopped (where the target can; refused for spot, local, SSH pools, TPU VMs).
    Jobs on it are ended first. A managed job's cluster is refused: cancel the job with
    `skyc jobs cancel ID`. Another user's cluster is stopped only when you say yes (or
    pass --yes)."""
    from skyc.apply.launch import check_not_managed
    from skyc.apply.ownership import check_owner, record_override
    from skyc.apply.power import stop_cluster
    from skyc.cli.options import terminal_ask
    from skyc.cli.output import print_line
    from skyc.cli.progress import ConsoleReporter

    check_not_managed(cluster, "stopping")
    owner = check_owner(cluster, "stop", yes, terminal_ask())
    say_if_locked(cluster, lock_timeout)
    if owner is not None:
        record_override(cluster, "stop", owner)
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
    from skyc.apply.power import start_cluster
    from skyc.cli.output import print_line
    from skyc.cli.progress import ConsoleReporter

    say_if_locked(cluster, lock_timeout)
    info = start_cluster(cluster, ConsoleReporter(), lock_timeout)
    if info is None:
        print_line(f"cluster {cluster} is not stopped")
        return
    print_line(f"cluster {cluster}: UP ({len(info.nodes)} node(s))")


def register(app: typer.Typer) -> None:
    app.command("autostop")(autostop_cmd)
    app.command("stop")(stop_cmd)
    app.command("start")(start_cmd)
