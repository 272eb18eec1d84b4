"""``skyc status``: the clusters skyc knows, from the state (the local sqlite file, or a
team's PostgreSQL database): the caller's own (and those recorded before owners were),
everyone's with ``-u``."""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, cast

import typer

from skyc.schemas import versions

if TYPE_CHECKING:
    from skyc.apply.orphans import Orphan
    from skyc.state.database import (
        ClusterRecord,
        ClusterStatus,
        EventRecord,
        JobRecord,
        StateDB,
    )

FORMATS = ("table", "json")
# --format json: {"format_version", "clusters": [...], "orphans": [...]} (`skyc schema
# status`; the version's history: skyc.schemas.versions).
STATUS_JSON_VERSION = versions.STATUS


Probe = Callable[["ClusterRecord"], "str | tuple[str, str]"]


def refresh_cluster(db: StateDB, name: str, probe: Probe) -> ClusterRecord:
    """Set cluster ``name``'s status to what ``probe`` reports (INIT/UP/STOPPED/FAILED).

    ``probe`` returns a status, or ``(status, note)`` saying why. A change is
    recorded as a ``refresh`` event (with the note). Returns the updated record.
    """
    from skyc.errors import StateError
    from skyc.state.database import CLUSTER_STATUSES

    record = db.get_cluster(name)
    if record is None:
        raise StateError(f"no cluster named '{name}'", hint="`skyc status` lists the clusters")
    result = probe(record)
    observed, note = (result, "") if isinstance(result, str) else result
    if observed not in CLUSTER_STATUSES:
        raise StateError(
            f"cluster '{name}': the status probe returned {observed!r}, expected one of "
            f"{', '.join(CLUSTER_STATUSES)}"
        )
    refreshes = [e for e in db.events(name) if e.kind == "refresh"]
    last_note = (refreshes[-1].data or {}).get("note") if refreshes else None
    if observed != record.status or (note and note != last_note):  # a new reason too
        from skyc.apply.reconcile import hourly_cost_after

        db.set_cluster_status(name, cast("ClusterStatus", observed))
        cost = hourly_cost_after(record, observed)  # a stopped cluster pays for its disks
        if cost is not None:
            db.upsert_cluster(record.model_copy(update={"status": observed,
                                                        "hourly_cost": cost}))
        message = (f"status {record.status} -> {observed}" if observed != record.status
                   else f"status {observed}") + (f": {note}" if note else "")
        db.add_event(
            name, "refresh", message, {"from": record.status, "to": observed, "note": note},
        )
    updated = db.get_cluster(name)
    assert updated is not None
    return updated


def format_age(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    s = max(int(seconds), 0)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m"
    if s < 86400:
        return f"{s // 3600}h {s % 3600 // 60}m"
    return f"{s // 86400}d {s % 86400 // 3600}h"


def resources(placement: dict[str, Any]) -> str:
    """``2x p4d.24xlarge (A100:8) [spot]`` from a placement dict."""
    parts = []
    num = placement.get("num_nodes") or 1
    itype = placement.get("instance_type")
    if itype:
        parts.append(f"{num}x {itype}" if num > 1 else str(itype))
    accs = placement.get("accelerators") or {}
    if accs:
        text = ", ".join(f"{k}:{v:g}" if isinstance(v, float) else f"{k}:{v}"
                         for k, v in sorted(accs.items()))
        parts.append(f"({text})")
    if placement.get("use_spot"):
        parts.append("[spot]")
    return " ".join(parts) or "-"


def infra(record: ClusterRecord) -> str:
    return "/".join(p for p in (record.cloud, record.region, record.zone) if p)


def cluster_summary(db: StateDB, record: ClusterRecord, now: float) -> dict[str, Any]:
    """One cluster as the JSON output shows it."""
    return cluster_summaries(db, [record], now)[0]


def cluster_summaries(db: StateDB, records: list[ClusterRecord], now: float
                      ) -> list[dict[str, Any]]:
    """Clusters as the JSON output shows them: their last jobs and autostop settings
    read once for all (a shared state answers each read over the network)."""
    jobs = db.jobs_by_id(r.last_job for r in records if r.last_job is not None)
    stops = db.last_events("autostop") if records else {}
    return [_summary(record, now, jobs.get(record.last_job or -1),
                     _autostop(stops.get(record.name))) for record in records]


def _summary(record: ClusterRecord, now: float, last_job: JobRecord | None,
             autostop: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "name": record.name,
        "owner": record.owner,
        "status": record.status,
        "infra": infra(record),
        "cloud": record.cloud,
        "region": record.region,
        "zone": record.zone,
        "resources": resources(record.placement),
        "placement": record.placement,
        "nodes": record.nodes,
        "engine": record.engine,
        "hourly_cost": record.hourly_cost,
        "hourly_cost_total": record.hourly_cost,
        "hourly_cost_per_node": round(record.hourly_cost / _node_count(record), 6),
        "autostop": autostop,
        "launched_at": record.launched_at,
        "age_s": None if record.launched_at is None else round(now - record.launched_at, 1),
        "last_job": None if last_job is None else {
            "id": last_job.job_id if last_job.job_id is not None else last_job.id,
            "name": last_job.name, "status": last_job.status,
        },
    }


def _node_count(record: ClusterRecord) -> int:
    """The nodes the cluster's price is for: the placement's (as plan counts them),
    else the nodes recorded; at least 1."""
    placed = record.placement.get("num_nodes")
    count = placed if isinstance(placed, int) and placed > 0 else len(record.nodes)
    return max(count, 1)


def autostop_setting(db: StateDB, name: str) -> dict[str, Any] | None:
    """The cluster's autostop (idle_minutes, down, wait_for) as last set; None when off."""
    events = [e for e in db.events(name) if e.kind == "autostop"]
    return _autostop(events[-1] if events else None)


def _autostop(event: EventRecord | None) -> dict[str, Any] | None:
    data = event.data if event is not None else None
    return None if not data or data.get("cancelled") else data


def _status_text(row: dict[str, Any]) -> str:
    auto = row.get("autostop")
    if not auto:
        return str(row["status"])
    action = "down" if auto.get("down") else "stop"
    return f"{row['status']} (autostop {auto.get('idle_minutes'):g}m, {action})"


def _event_dict(event: EventRecord) -> dict[str, Any]:
    return event.model_dump(mode="json", exclude={"cluster"})


def _timestamp(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def _print_table(db: StateDB, rows: list[dict[str, Any]], verbose: bool,
                 owners: bool = False) -> None:
    """The clusters as a table (``owners``: with an OWNER column), then with
    ``verbose`` each one's events (with who did one, where that is not its owner)."""
    from rich.markup import escape
    from rich.table import Table

    from skyc.cli.output import console

    table = Table(box=None, pad_edge=False)
    wrapping = {"INFRA", "RESOURCES", "LAST JOB"}
    columns = ("CLUSTER", *(("OWNER",) if owners else ()), "INFRA", "RESOURCES", "NODES",
               "STATUS", "$/HOUR", "AGE", "LAST JOB")
    for column in columns:
        table.add_column(column, no_wrap=column not in wrapping, overflow="fold")
    for row in rows:
        job = row["last_job"]
        table.add_row(
            escape(row["name"]), *((escape(row["owner"] or "-"),) if owners else ()),
            escape(row["infra"] or "-"), escape(row["resources"]),
            str(len(row["nodes"])), _status_text(row), f"{row['hourly_cost']:.2f}",
            format_age(row["age_s"]),
            "-" if job is None else escape(f"#{job['id']} {job['name'] or ''} {job['status']}"),
        )
    console.print(table)
    if verbose:
        for row in rows:
            _print_events(db, row)


def _print_events(db: StateDB, row: dict[str, Any]) -> None:
    from rich.markup import escape

    from skyc.cli.output import console

    console.print(f"\n[bold]Events of {escape(row['name'])}[/]")
    events = db.events(row["name"])
    if not events:
        console.print("  (none)")
    for event in events:
        by = (f" (by {event.actor})" if event.actor and row["owner"]
              and event.actor != row["owner"] else "")
        line = f"  {_timestamp(event.ts)}  {event.kind:<9} {event.message}{by}"
        console.print(escape(line))


def engine_probe(record: ClusterRecord) -> tuple[str, str]:
    """The cluster's status as its stack's engine and its nodes see it (UP, or INIT
    with a note: see :mod:`skyc.apply.reconcile`)."""
    from skyc.apply.reconcile import probe

    return probe(record)


def show_status(name: str | None, verbose: bool, fmt: str, refresh: bool = False,
                all_users: bool = False) -> None:
    """The clusters (``name``: that one, whoever's it is): the caller's own, everyone's
    with ``all_users``; ``refresh`` reconciles the caller's own first."""
    from skyc.apply.orphans import orphan_workspaces
    from skyc.errors import ConfigError
    from skyc.state.database import StateDB, owned_by

    if fmt not in FORMATS:
        raise ConfigError(f"--format: expected one of {', '.join(FORMATS)}, got {fmt!r}")
    with StateDB() as db:
        known = db.list_clusters()
        records = _shown(db, known, all_users) if name is None else [_one(db, name)]
        orphans = orphan_workspaces(r.name for r in known) if name is None else []
        if refresh:  # another owner's cluster is probed from its owner's workspace
            records = [_refresh(db, r) if owned_by(r.owner, db.caller()) else r
                       for r in records]
        now = time.time()
        rows = cluster_summaries(db, records, now)
        if fmt == "json":
            if verbose:
                for row in rows:
                    row["events"] = [_event_dict(e) for e in db.events(row["name"])]
            typer.echo(json.dumps({"format_version": STATUS_JSON_VERSION, "clusters": rows,
                                   "orphans": [_orphan_dict(o) for o in orphans],
                                   "networks": _networks(db) if name is None else []},
                                  indent=2, sort_keys=True))
            return
        if rows:
            _print_table(db, rows, verbose, owners=all_users)
        elif not orphans:
            typer.echo(_none_text(len(known) - len(rows)))
        if orphans:
            print_orphans(db, orphans, bool(rows))
        if name is None and verbose:
            _print_networks(_networks(db))


def _networks(db: StateDB) -> list[dict[str, Any]]:
    """The shared networks the state records, with the clusters that use them."""
    from skyc.state.networks import list_networks, live_users

    return [{"name": n.name, "cloud": n.cloud, "region": n.region, "status": n.status,
             "zones": n.zones, "clusters": live_users(db, n), "owner": n.owner}
            for n in list_networks(db)]


def _print_networks(networks: list[dict[str, Any]]) -> None:
    for n in networks:
        used = ", ".join(n["clusters"]) or "no cluster"
        typer.echo(f"network {n['name']} ({n['cloud']}/{n['region']}, {n['status']}): "
                   f"used by {used}")


def _shown(db: StateDB, known: list[ClusterRecord], all_users: bool) -> list[ClusterRecord]:
    """The clusters a listing shows: everyone's with ``all_users``, else the caller's
    own (and those recorded before owners were)."""
    from skyc.state.database import owned_by

    return known if all_users else [r for r in known if owned_by(r.owner, db.caller())]


def _none_text(others: int) -> str:
    """What ``status`` says when it lists no cluster (``others``: other owners' ones)."""
    if not others:
        return "No clusters. Launch one with `skyc apply TASK.yaml`."
    return (f"No clusters of yours; {others} of other users (`skyc status -u` lists "
            f"{'it' if others == 1 else 'them'}).")


def _one(db: StateDB, name: str) -> ClusterRecord:
    from skyc.errors import ConfigError, StateError
    from skyc.stacks.workspace import cluster_workspace, has_stack

    record = db.get_cluster(name)
    if record is not None:
        return record
    try:
        workspace = cluster_workspace(name)
    except ConfigError:  # not a name a cluster can have: no workspace either
        workspace = None
    if workspace is not None and has_stack(workspace):
        raise StateError(
            f"no cluster named '{name}' in {db.where}, but its workspace {workspace} holds "
            "a stack: what it created may still exist",
            hint=f"record it again with `skyc state adopt {name}`, or destroy it with "
            f"`skyc down {name}`")
    raise StateError(f"no cluster named '{name}'", hint="`skyc status` lists the clusters")


def _orphan_dict(orphan: Orphan) -> dict[str, Any]:
    return {"name": orphan.name, "workspace": str(orphan.workspace), "engine": orphan.engine,
            "cloud": orphan.cloud, "nodes": orphan.nodes,
            "adopt": f"skyc state adopt {orphan.name}", "destroy": f"skyc down {orphan.name}"}


def print_orphans(db: StateDB, orphans: list[Orphan], after_table: bool) -> None:
    """The workspaces the state has no record of, what to do with them, and the copies
    of a sqlite state that may still know them."""
    from skyc.state.database import kept_backups

    lines = ["" if after_table else "No clusters recorded.",
             f"Cluster workspaces without a record in {db.where} (what their stacks created "
             "may still exist, and cost money):"]
    width = max(len(o.name) for o in orphans)
    for orphan in orphans:
        nodes = f"{orphan.nodes} node{'s' if orphan.nodes != 1 else ''}"
        lines.append(f"  {orphan.name:<{width}}  {orphan.cloud or '-'}  {nodes}  "
                     f"{orphan.workspace}")
    lines.append("Record one again: skyc state adopt NAME    destroy it: skyc down NAME")
    copies = kept_backups(db.path) if db.path is not None else []
    if copies:
        lines.append("Copies of the state skyc kept (put one back with `skyc state restore "
                     "--from FILE`):")
        lines += [f"  {copy}" for copy in copies]
    typer.echo("\n".join(lines))


def _refresh(db: StateDB, record: ClusterRecord) -> ClusterRecord:
    """Refresh one cluster unless another skyc holds its lock (then it is busy)."""
    from skyc.errors import LockTimeout
    from skyc.state.locks import cluster_lock

    try:
        with cluster_lock(record.name, timeout=0):
            return refresh_cluster(db, record.name, engine_probe)
    except LockTimeout:
        return record


def register(app: typer.Typer) -> None:
    from skyc.cli.options import all_users_option
    from skyc.cli.output import json_errors

    @app.command("status")
    @functools.partial(json_errors, document="status")
    def status(
        name: str | None = typer.Argument(None, metavar="CLUSTER", help="Show only this cluster."),
        verbose: bool = typer.Option(
            False, "--verbose", "-v",
            help="Also show each cluster's event trail, and the shared networks."),
        fmt: str = typer.Option("table", "--format", metavar="table|json", help="table or json."),
        refresh: bool = typer.Option(
            False, "--refresh", "-r",
            help="Reconcile with the engine's state and the nodes first (reads the cloud).",
        ),
        all_users: bool = all_users_option(),
    ) -> None:
        """Show clusters: infra, resources, nodes, status, cost, age and last job (yours;
        everyone's with -u)."""
        show_status(name, verbose, fmt, refresh, all_users)
