"""``skyc state``: the state itself. ``restore`` puts back a copy skyc kept of the sqlite
file, ``adopt`` records a cluster again from its workspace, ``migrate`` copies the sqlite
state into a team's PostgreSQL database, ``check`` says how sound a state is."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from pathlib import Path

    from skyc.state.check import Report

state_app = typer.Typer(
    help="The state (the local state.db, or a team's PostgreSQL database): check it, copy "
    "it into PostgreSQL, put back a copy skyc kept, or record a cluster again from its "
    "workspace.",
    no_args_is_help=True, add_completion=False, rich_markup_mode=None,
)


@state_app.command("restore")
def state_restore(
    source: str | None = typer.Option(
        None, "--from", metavar="FILE",
        help="The copy to put back (default: state.db.bak, the latest one)."),
) -> None:
    """Replace state.db with a copy skyc kept; the database it replaces is kept beside
    it. Run it while no other skyc command runs. (A PostgreSQL state is restored with
    its server's own backups.)"""
    from pathlib import Path

    from skyc.apply.orphans import orphan_workspaces
    from skyc.cli.cmd_status import print_orphans
    from skyc.errors import StateError
    from skyc.settings.state_url import redacted_url, state_url
    from skyc.state.database import StateDB, backup_path, default_path, restore_state

    shared = state_url()
    if shared is not None:
        raise StateError(
            f"the state is the PostgreSQL database {redacted_url(shared)}, not state.db",
            hint="restore it from its server's backups; to put back a copy of the local "
            "state.db, run this with SKYC_STATE_URL=sqlite")

    path = default_path()
    copy = Path(source) if source else backup_path(path)
    if source is None and not copy.exists():
        _no_latest_copy(path, copy)
    kept = restore_state(path, copy)
    typer.echo(f"restored {path} from {copy}")
    if kept is not None:
        typer.echo(f"the database it replaced is kept as {kept}")
    with StateDB(path) as db:
        known = db.list_clusters()
        orphans = orphan_workspaces(r.name for r in known)
        typer.echo(f"{len(known)} cluster(s) recorded; `skyc status --refresh` checks them "
                   "against their stacks and nodes")
        if orphans:
            print_orphans(db, orphans, True)


def _no_latest_copy(path: Path, latest: Path) -> None:
    from skyc.errors import StateError
    from skyc.state.database import kept_backups

    copies = kept_backups(path)
    if copies:
        raise StateError(f"no copy of the state database at {latest}",
                         hint="pick one of the copies skyc kept with --from: "
                         + ", ".join(str(c) for c in copies))
    raise StateError(f"no copy of the state database at {latest}: skyc keeps one once a "
                     "cluster was recorded, started, stopped or removed",
                     hint="`skyc status` lists the workspaces to adopt (`skyc state adopt "
                     "NAME`)")


@state_app.command("adopt")
def state_adopt(
    names: list[str] = typer.Argument(..., metavar="CLUSTER",
                                      help="Clusters whose workspaces have no record."),
) -> None:
    """Record clusters again from their workspaces ($SKYC_HOME/clusters/NAME): the
    stack's engine, and the nodes and placement of the last apply."""
    from skyc.apply.orphans import adopt_workspace
    from skyc.cli.cmd_status import infra
    from skyc.state.database import StateDB

    with StateDB() as db:
        for name in names:
            record = adopt_workspace(db, name)
            typer.echo(f"{name}: recorded again ({record.status}, {infra(record)}, "
                       f"{len(record.nodes)} node(s)); check it with `skyc status "
                       f"--refresh {name}`")


@state_app.command("migrate")
def state_migrate(
    to: str | None = typer.Option(
        None, "--to", metavar="URL",
        help="The PostgreSQL database: postgresql://USER@HOST:PORT/DATABASE (default: "
        "SKYC_STATE_URL or the config's state:). Keep the password in PGPASSWORD or "
        "~/.pgpass."),
    source: str | None = typer.Option(
        None, "--from", metavar="FILE", help="The sqlite state (default: $SKYC_HOME/state.db)."),
    merge: bool = typer.Option(
        False, "--merge",
        help="Add the records to a database that already holds others' (ids are renumbered "
        "above its own; clusters must have names it does not use)."),
) -> None:
    """Copy the local sqlite state (clusters, jobs, events, managed jobs with their
    attempts and trail) into a PostgreSQL database, in one transaction. The sqlite file
    is left as it is."""
    from pathlib import Path

    from skyc.errors import ConfigError, StateError
    from skyc.settings.state_url import check_setting, state_url
    from skyc.state.dbfile import default_path
    from skyc.state.pg_store import PostgresStore
    from skyc.state.sqlite_store import SqliteStore
    from skyc.state.transfer import copy_state

    url = check_setting(to, "--to") if to else state_url()
    if url is None:
        raise ConfigError("--to: name the PostgreSQL database to copy the state into",
                          hint="e.g. --to postgresql://skyc@db.example.com:5432/skyc")
    path = Path(source) if source else default_path()
    if not path.is_file():
        raise StateError(f"no sqlite state at {path}", hint="name the file with --from")
    src = SqliteStore(path)
    try:
        target = PostgresStore(url)
        try:
            moved = copy_state(src, target, merge=merge)
        finally:
            target.close()
    finally:
        src.close()
    lines = [f"copied the sqlite state {path} into {target.where}:"]
    lines += [f"  {table:<17} {count:>9}" for table, count in moved.counts.items()]
    shifted = [f"{t} +{n}" for t, n in moved.offsets.items() if n]
    if shifted:
        lines.append("ids moved up (merged): " + ", ".join(shifted))
    lines.append(f"{sum(moved.counts.values())} record(s); {path} is left as it was. Use "
                 "the PostgreSQL state with `state: URL` in $SKYC_HOME/config.yaml or "
                 "SKYC_STATE_URL (the password in PGPASSWORD or ~/.pgpass)")
    typer.echo("\n".join(lines))


@state_app.command("check")
def state_check(
    fmt: str = typer.Option("table", "--format", metavar="table|json", help="table or json."),
) -> None:
    """Check the state this user is configured with (sqlite or PostgreSQL): its schema
    version, the rows of each table, every record read back, the references between
    tables. Exits 1 when something is wrong."""
    from skyc.errors import ConfigError
    from skyc.state.check import check_state
    from skyc.state.database import StateDB

    if fmt not in ("table", "json"):
        raise ConfigError(f"--format: expected one of table, json, got {fmt!r}")
    with StateDB() as db:
        report = check_state(db)
    if fmt == "json":
        typer.echo(json.dumps(report.as_dict(), indent=2, sort_keys=True))
    else:
        typer.echo(_report_text(report))
    if not report.ok:
        raise typer.Exit(1)


def _report_text(report: Report) -> str:
    from skyc.state.migrations import SCHEMA_VERSION

    lines = [f"state: {report.where} ({report.kind}), schema version "
             f"{report.schema_version} (this skyc: {SCHEMA_VERSION})"]
    lines += [f"  {table:<17} {count:>9}" for table, count in report.counts.items()]
    if report.kind == "sqlite":
        lines.append(f"sqlite's check: {report.storage}")
    if report.ok:
        lines.append("no problems found")
        return "\n".join(lines)
    lines.append(f"{report.total_problems} problem(s):")
    lines += [f"  {p.table} {p.key}: {p.message}" for p in report.problems]
    if report.total_problems > len(report.problems):
        lines.append(f"  ... and {report.total_problems - len(report.problems)} more")
    return "\n".join(lines)


def register(app: typer.Typer) -> None:
    app.add_typer(state_app, name="state")
