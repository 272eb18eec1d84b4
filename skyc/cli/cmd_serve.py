"""``skyc serve ...``: services (a task's ``service:`` section) behind one endpoint."""

from __future__ import annotations

import datetime
import json
import sys
import time
from pathlib import Path
from typing import Any

import typer

from skyc.cli import params
from skyc.cli.options import INFRA_HELP, env_file_option, env_values, one_infra

serve_app = typer.Typer(
    help="Services: a task with a service: section, its replicas behind one endpoint that "
    "balances, retries and streams requests (HTTPS with service.tls), with readiness probes "
    "and autoscaling; `serve update` moves the replicas to a new version of the task "
    "without downtime. Replicas run on local in this version; a local replica listens on "
    "$SKYC_SERVE_PORT.",
    no_args_is_help=True, add_completion=False, rich_markup_mode=None,
)


def _write(data: bytes) -> None:
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def _say(text: str) -> None:
    from skyc.cli.output import print_line

    print_line(text, err=True)


@serve_app.command("up")
def up_cmd(
    task: Path = typer.Argument(..., metavar="TASK", help="Task YAML with a service: section."),
    name: str | None = typer.Option(None, "--service-name", "-n", metavar="NAME",
                                    help="The service's name (default: skyc-service-XXXX)."),
    yes: bool = typer.Option(False, "-y", "--yes", help="Start without asking."),
    infra: list[str] = typer.Option([], "--infra", metavar="INFRA", help=INFRA_HELP),
    env: list[str] = typer.Option([], "--env", metavar="KEY[=VAL]",
                                  help="KEY=VAL (or KEY, from this environment)."),
    env_file: Path | None = env_file_option(),
) -> None:
    """Start a service: its controller launches the replicas and serves the endpoint."""
    from skyc.cli.output import print_line, print_warning
    from skyc.serve import prepare, up

    prepared = prepare(task, name, env_values(env_file, env), one_infra(infra))
    for warning in prepared.warnings:
        print_warning(warning)
    _confirm(yes, f"Start service {prepared.summary()}?")
    service = up(prepared)
    from skyc.serve.service import endpoint_of_service

    _say(f"service {service.name}: controller started; replicas are launching. Watch them "
         f"with `skyc serve status {service.name}`; take it down with "
         f"`skyc serve down {service.name}`")
    print_line(f"{service.name} {endpoint_of_service(service)}")


@serve_app.command("update")
def update_cmd(
    name: str = typer.Argument(..., metavar="NAME", help="The service."),
    task: Path = typer.Argument(..., metavar="TASK",
                                help="Task YAML with a service: section: the new version."),
    mode: str = typer.Option("rolling", "--mode", metavar="rolling|blue_green",
                             help="rolling (default): new replicas are launched one at a "
                             "time, each ready one replacing an old one, never fewer ready "
                             "than wanted; blue_green: the new replicas are launched "
                             "together and take all traffic once enough are ready, then "
                             "the old ones go."),
    yes: bool = typer.Option(False, "-y", "--yes", help="Update without asking."),
    infra: list[str] = typer.Option([], "--infra", metavar="INFRA", help=INFRA_HELP),
    env: list[str] = typer.Option([], "--env", metavar="KEY[=VAL]",
                                  help="KEY=VAL (or KEY, from this environment)."),
    env_file: Path | None = env_file_option(),
) -> None:
    """Move a service to a new version of its task (its run, setup, resources or
    service section): the endpoint stays, and keeps answering throughout."""
    from skyc.cli.output import print_line, print_warning
    from skyc.errors import ConfigError
    from skyc.serve import prepare
    from skyc.serve.rollout import MODES
    from skyc.serve.service import down_targets, update

    if mode not in MODES:
        raise ConfigError(f"--mode {mode}: expected one of {', '.join(MODES)}")
    down_targets([name], False)   # the service exists (else: the services there are)
    prepared = prepare(task, name, env_values(env_file, env), one_infra(infra))
    for warning in prepared.warnings:
        print_warning(warning)
    _confirm(yes, f"Update service {prepared.summary()} ({mode})?")
    version = update(name, prepared, mode)
    _say(f"service {name}: version {version} recorded; its replicas move to it ({mode}). "
         f"Watch them with `skyc serve status {name}`")
    print_line(f"{name} version {version}")


def _confirm(yes: bool, question: str) -> None:
    if yes:
        return
    from skyc.errors import ConfigError

    if not sys.stdin.isatty():
        raise ConfigError("refusing to go on without confirmation: stdin is not a terminal",
                          hint="pass -y (--yes) to go on non-interactively")
    if not typer.confirm(question, default=False, err=True):
        raise typer.Exit(1)


@serve_app.command("status")
def status_cmd(
    names: list[str] = typer.Argument(None, metavar="NAME", help="Services (default: all)."),
    show_endpoint: bool = typer.Option(False, "--endpoint",
                                       help="Print only the endpoint of the one NAME."),
    fmt: str = typer.Option("table", "--format", metavar="table|json", help="table or json."),
) -> None:
    """Services, their replicas and the autoscaler's decisions (json: everything)."""
    from skyc.errors import ConfigError
    from skyc.serve import status_document

    if fmt not in ("table", "json"):
        raise ConfigError(f"--format {fmt}: expected 'table' or 'json'")
    names = list(names or [])
    if show_endpoint:
        if len(names) != 1:
            raise ConfigError("--endpoint: give exactly one service NAME")
        from skyc.serve.service import endpoint_of

        typer.echo(endpoint_of(names[0]))
        return
    _revive()
    doc = status_document(names)
    if fmt == "json":
        typer.echo(json.dumps(doc, indent=2, sort_keys=True))
        return
    _print_status(doc["services"])


def _revive() -> None:
    """Start again the controllers that died (one line each)."""
    from skyc.errors import SkycError
    from skyc.serve.starter import revive

    for name, outcome in revive():
        if isinstance(outcome, SkycError):
            _say(f"service {name}: its controller was not running and did not start again: "
                 f"{outcome.message}")
        else:
            _say(f"service {name}: its controller was not running: restarted it "
                 f"(pid {outcome})")


def _ago(ts: float | None, now: float) -> str:
    if ts is None:
        return "-"
    return str(datetime.timedelta(seconds=int(now - ts)))


def _versions(service: dict[str, Any]) -> str:
    """SkyPilot's VERSION column: the live replicas' versions ("1,2" during an update),
    or the latest when none is live; the update's mode while it goes on."""
    shown = ",".join(str(v) for v in service["active_versions"]) or str(service["version"])
    mode = service["update_mode"]
    return f"{shown} ({mode} to {service['version']})" if mode else shown


def _print_status(services: list[dict[str, Any]]) -> None:
    from skyc.cli.output import fitted_table, print_line, print_table

    if not services:
        print_line("No services.")
        return
    now = time.time()
    print_table(fitted_table("Services", ("NAME", "VERSION", "UPTIME", "STATUS", "REPLICAS",
                                          "ENDPOINT", "POLICY"),
                             [(s["name"], _versions(s), _ago(s["created_at"], now),
                               s["status"], f"{s['ready_replicas']}/{s['target_replicas']}",
                               s["endpoint"], s["replica_policy"]) for s in services],
                             drop=("POLICY",)))
    rows = [(s["name"], str(r["id"]), str(r["version"]), r["cluster"], r["endpoint"],
             _ago(r["launched_at"], now) + " ago", r["status"], r["why"] or "-")
            for s in services for r in s["replicas"]]
    if rows:
        print_table(fitted_table("Service Replicas", ("SERVICE", "ID", "VERSION", "CLUSTER",
                                                      "ENDPOINT", "LAUNCHED", "STATUS", "WHY"),
                                 rows, right=("ID", "VERSION"),
                                 drop=("WHY", "CLUSTER", "LAUNCHED")))
    for s in services:
        if s["failure"]:
            print_line(f"{s['name']}: {s['failure']}")
        for d in s["decisions"][-5:]:
            when = datetime.datetime.fromtimestamp(d["at"]).strftime("%H:%M:%S")
            print_line(f"{s['name']} autoscaler {when}: {d['from']} -> {d['to']} "
                       f"replicas: {d['reason']}")


@serve_app.command("logs")
def logs_cmd(
    name: str = typer.Argument(..., metavar="NAME", help="The service."),
    replica: int | None = typer.Argument(None, metavar="REPLICA_ID", parser=params.JOB_ID,
                                         help="A replica's launch and run output."),
    follow: bool = typer.Option(False, "--follow/--no-follow", "-f",
                                help="Keep following the output."),
    controller: bool = typer.Option(False, "--controller", help="The controller's log."),
    load_balancer: bool = typer.Option(False, "--load-balancer",
                                       help="The load balancer's log (the controller's: "
                                       "they are one process)."),
) -> None:
    """A replica's output, or the controller's (and load balancer's) log."""
    from skyc.errors import ConfigError
    from skyc.serve.logs import controller_log, replica_log

    if (replica is not None) + controller + load_balancer != 1:
        raise ConfigError("give one of REPLICA_ID, --controller and --load-balancer",
                          hint=f"see the replicas with `skyc serve status {name}`")
    if replica is None:
        controller_log(name, follow, _write)
    else:
        replica_log(name, replica, follow, _write)


@serve_app.command("down")
def down_cmd(
    names: list[str] = typer.Argument(None, metavar="NAME", help="Services to take down."),
    all_services: bool = typer.Option(False, "--all", "-a", help="Every service."),
    yes: bool = typer.Option(False, "-y", "--yes", help="Take them down without asking."),
) -> None:
    """Take services down: every replica's cluster, the endpoint and the controller."""
    from skyc.cli.output import print_line
    from skyc.serve import down
    from skyc.serve.service import down_targets

    targets = down_targets(list(names or []), all_services)
    if not targets:
        print_line("No services.")
        return
    _confirm(yes, f"Take down service(s) {', '.join(targets)}?")
    for name in targets:
        down(name, _say)
        print_line(f"service {name}: down")


@serve_app.command("controller", hidden=True)
def controller_cmd(name: str = typer.Argument(..., metavar="NAME", help="The service.")) -> None:
    """A service's controller process (``skyc serve up`` starts it)."""
    from skyc.cli.output import print_line
    from skyc.errors import AlreadyRunning
    from skyc.serve.daemon import serve

    try:
        serve(name)
    except AlreadyRunning as exc:
        print_line(exc.message)


def register(app: typer.Typer) -> None:
    app.add_typer(serve_app, name="serve")
