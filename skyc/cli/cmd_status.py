"""``skyc status``: the clusters skyc knows, from the local state database."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, cast

import typer

if TYPE_CHECKING:
    from skyc.state import ClusterRecord, ClusterStatus, EventRecord, StateDB

FORMATS = ("table", "json")
# --format json: {"format_version", "clusters": [...]}; additions bump the minor.
STATUS_JSON_VERSION = "1.0"


Probe = Callable[["ClusterRecord"], "str | tuple[str, str]"]


def refresh_cluster(db: StateDB, name: str, probe: Probe) -> ClusterRecord:
    """Set cluster ``name``'s status to what ``probe`` reports (INIT/UP/STOPPED/FAILED).

    ``probe`` returns a status, or ``(status, note)`` saying why. A change is
    recorded as a ``refresh`` event (with the note). Returns the updated record.
    """
    from skyc.errors import StateError
    from skyc.state import CLUSTER_STATUSES

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
        from skyc.reconcile import hourly_cost_after

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
    last_job = db.get_job(record.last_job) if record.last_job is not None else None
    return {
        "name": record.name,
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
        "autostop": autostop_setting(db, record.name),
        "launched_at": record.launched_at,
        "age_s": None if record.launched_at is None else round(now - record.launched_at, 1),
        "last_job": None if last_job is None else {
            "id": last_job.job_id if last_job.job_id is not None else last_job.id,
            "name": last_job.name, "status": last_job.status,
        },
    }


def autostop_setting(db: StateDB, name: str) -> dict[str, Any] | None:
    """The cluster's autostop (idle_minutes, down, wait_for) as last set; None when off."""
    events = [e for e in db.events(name) if e.kind == "autostop"]
    data = events[-1].data if events else None
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


def _print_table(db: StateDB, rows: list[dict[str, Any]], verbose: bool) -> None:
    from rich.markup import escape
    from rich.table import Table

    from skyc.cli.output import console

    table = Table(box=None, pad_edge=False)
    wrapping = {"INFRA", "RESOURCES", "LAST JOB"}
    for column in ("CLUSTER", "INFRA", "RESOURCES", "NODES", "STATUS", "$/HOUR", "AGE",
                   "LAST JOB"):
        table.add_column(column, no_wrap=column not in wrapping, overflow="fold")
    for row in rows:
        job = row["last_job"]
        table.add_row(
            escape(row["name"]), escape(row["infra"] or "-"), escape(row["resources"]),
            str(len(row["nodes"])), _status_text(row), f"{row['hourly_cost']:.2f}",
            format_age(row["age_s"]),
            "-" if job is None else escape(f"#{job['id']} {job['name'] or ''} {job['status']}"),
        )
    console.print(table)
    if verbose:
        for row in rows:
            console.print(f"\n[bold]Events of {escape(row['name'])}[/]")
            events = db.events(row["name"])
            if not events:
                console.print("  (none)")
            for event in events:
                line = f"  {_timestamp(event.ts)}  {event.kind:<9} {event.message}"
                console.print(escape(line))


def engine_probe(record: ClusterRecord) -> tuple[str, str]:
    """The cluster's status as its stack's engine and its nodes see it (UP, or INIT
    with a note: see :mod:`skyc.reconcile`)."""
    from skyc.reconcile import probe

    return probe(record)


def show_status(name: str | None, verbose: bool, fmt: str, refresh: bool = False) -> None:
    from skyc.errors import ConfigError, StateError
    from skyc.state import StateDB

    if fmt not in FORMATS:
        raise ConfigError(f"--format: expected one of {', '.join(FORMATS)}, got {fmt!r}")
    with StateDB() as db:
        if name is None:
            records = db.list_clusters()
        else:
            record = db.get_cluster(name)
            if record is None:
                raise StateError(
                    f"no cluster named '{name}'", hint="`skyc status` lists the clusters"
                )
            records = [record]
        if refresh:
            records = [_refresh(db, r) for r in records]
        now = time.time()
        rows = [cluster_summary(db, r, now) for r in records]
        if fmt == "json":
            if verbose:
                for row in rows:
                    row["events"] = [_event_dict(e) for e in db.events(row["name"])]
            typer.echo(json.dumps({"format_version": STATUS_JSON_VERSION, "clusters": rows},
                                  indent=2, sort_keys=True))
        elif not rows:
            typer.echo("No clusters. Launch one with `skyc apply TASK.yaml`.")
        else:
            _print_table(db, rows, verbose)


def _refresh(db: StateDB, record: ClusterRecord) -> ClusterRecord:
    """Refresh one cluster unless another skyc holds its lock (then it is busy)."""
    from skyc.errors import LockTimeout
    from skyc.locks import cluster_lock

    try:
        with cluster_lock(record.name, timeout=0):
            return refresh_cluster(db, record.name, engine_probe)
    except LockTimeout:
        return record


def register(app: typer.Typer) -> None:
    @app.command("status")
    def status(
        name: str | None = typer.Argument(None, metavar="CLUSTER", help="Show only this cluster."),
        verbose: bool = typer.Option(
            False, "--verbose", "-v", help="Also show each cluster's event trail."
        ),
        fmt: str = typer.Option("table", "--format", metavar="table|json", help="table or json."),
        refresh: bool = typer.Option(
            False, "--refresh", "-r",
            help="Reconcile with the engine's state and the nodes first (reads the cloud).",
        ),
    ) -> None:
        """Show clusters: infra, resources, nodes, status, cost, age and last job."""
        show_status(name, verbose, fmt, refresh)
