"""Which service a cluster serves as a replica, for the commands that would end it.

Where the services' own state lives (``$SKYC_HOME/serve/services.db``, written by
:mod:`skyc.serve.store`) and which replica statuses are live are said here, so that
apply, which refuses to end a replica's cluster, needs nothing of the serve package.

A live replica's cluster belongs to its service: ``skyc down`` (or stop) of it would
take the replica out from under its controller, which would launch another. These
read ``services.db`` directly (sqlite only, nothing else imported) and cost nothing
when there is no service.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Sequence
from pathlib import Path

from skyc.errors import SkycError
from skyc.settings.home import skyc_home

# The statuses of a replica whose cluster its service still owns.
LIVE = ("PROVISIONING", "STARTING", "READY", "NOT_READY")
DB_NAME = "services.db"


def serve_root() -> Path:
    """Where the services keep their state, logs and controllers' files."""
    return skyc_home() / "serve"


def db_path() -> Path:
    return serve_root() / DB_NAME


def replica_of(cluster: str) -> tuple[str, int] | None:
    """(service, replica id) of the live replica whose cluster ``cluster`` is."""
    path = db_path()
    if not path.exists():
        return None
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True,
                                                timeout=10.0)) as conn:
            row = conn.execute("SELECT service, id, status FROM replicas WHERE cluster = ?",
                               (cluster,)).fetchone()
    except sqlite3.Error:
        return None
    if row is None or row[2] not in LIVE:
        return None
    return str(row[0]), int(row[1])


def check_not_replica(cluster: str, doing: str = "destroying") -> None:
    """Refuse to end a live replica's cluster from outside its service."""
    owner = replica_of(cluster)
    if owner is None:
        return
    service, replica = owner
    raise SkycError(
        f"cluster {cluster} is replica {replica} of service {service}: {doing} it would "
        "take it out of the service, whose controller would launch another; the cluster "
        "is left as it is",
        hint=f"take the service down with `skyc serve down {service}` (every replica "
        "goes with it)")


def skip_replicas(names: Sequence[str]) -> tuple[list[str], list[str]]:
    """``skyc down -a``: the clusters to destroy, and a note for each replica left alone."""
    kept: list[str] = []
    notes: list[str] = []
    for name in names:
        owner = replica_of(name)
        if owner is None:
            kept.append(name)
        else:
            notes.append(f"{name}: skipped, it is replica {owner[1]} of service {owner[0]}; "
                         f"take the service down with `skyc serve down {owner[0]}`")
    return kept, notes
