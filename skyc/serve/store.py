"""The services' state: ``$SKYC_HOME/serve/services.db`` (sqlite, WAL), shared by the
controllers (one per service) and the ``skyc serve`` commands. It holds no secret: a
task's secret values are read again from the environment by the controller.

``services`` holds each service's latest version (its task, config, update mode);
``versions`` the config of every version, by which the replicas still running an
older one are probed."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from skyc.errors import StateError
from skyc.serve.records import Decision, Replica, Service
from skyc.state.service_claims import db_path

_SCHEMA = """
CREATE TABLE IF NOT EXISTS services (
  name TEXT PRIMARY KEY, status TEXT NOT NULL, created_at REAL NOT NULL,
  port INTEGER NOT NULL, task_file TEXT NOT NULL, cwd TEXT NOT NULL, envs TEXT NOT NULL,
  config TEXT NOT NULL, target INTEGER NOT NULL, down_requested INTEGER NOT NULL,
  failure TEXT, next_replica INTEGER NOT NULL, version INTEGER NOT NULL DEFAULT 1,
  update_mode TEXT);
CREATE TABLE IF NOT EXISTS replicas (
  service TEXT NOT NULL, id INTEGER NOT NULL, cluster TEXT NOT NULL, port INTEGER NOT NULL,
  status TEXT NOT NULL, launched_at REAL NOT NULL, started_at REAL, ready_at REAL,
  job_id INTEGER, why TEXT, log_tail TEXT NOT NULL, version INTEGER NOT NULL DEFAULT 1,
  PRIMARY KEY (service, id));
CREATE TABLE IF NOT EXISTS versions (
  service TEXT NOT NULL, version INTEGER NOT NULL, config TEXT NOT NULL,
  PRIMARY KEY (service, version));
CREATE TABLE IF NOT EXISTS decisions (
  service TEXT NOT NULL, at REAL NOT NULL, before INTEGER NOT NULL, after INTEGER NOT NULL,
  reason TEXT NOT NULL);
"""
_JSON = ("envs", "config", "log_tail")
# Columns added since the first version, added to a database made before them.
_ADDED = (("services", "version", "INTEGER NOT NULL DEFAULT 1"),
          ("services", "update_mode", "TEXT"),
          ("replicas", "version", "INTEGER NOT NULL DEFAULT 1"))


def _encode(record: Any) -> dict[str, Any]:
    row = asdict(record)
    for key in _JSON:
        if key in row:
            row[key] = json.dumps(row[key], sort_keys=True)
    return row


def _decode(kind: type[Any], row: sqlite3.Row) -> Any:
    doc = {k: (json.loads(row[k]) if k in _JSON else row[k]) for k in row.keys()}  # noqa: SIM118
    if "down_requested" in doc:
        doc["down_requested"] = bool(doc["down_requested"])
    return kind(**doc)


def _assignments(values: dict[str, Any]) -> tuple[str, tuple[Any, ...]]:
    """``a = ?, b = ?`` and the values, for an UPDATE of a service's fields."""
    known = {f.name for f in fields(Service)}
    assert set(values) <= known, set(values) - known
    row = {k: (json.dumps(v, sort_keys=True) if k in _JSON else v) for k, v in values.items()}
    return ", ".join(f"{k} = ?" for k in row), tuple(row.values())


class ServeStore:
    """One connection, for the thread that opened it."""

    def __init__(self, path: Path | None = None, *, create: bool = True) -> None:
        self.path = path or db_path()
        if create:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
            self.conn.row_factory = sqlite3.Row
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.executescript(_SCHEMA)
            self._add_columns()
        except sqlite3.Error as exc:
            raise StateError(f"cannot use the services database {self.path} ({exc})",
                             hint=f"{self.path.parent} must be a writable directory") from None

    def _add_columns(self) -> None:
        for table, column, declared in _ADDED:
            have = {row[1] for row in self.conn.execute(f"PRAGMA table_info({table})")}
            if column in have:
                continue
            try:
                self.conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declared}")
            except sqlite3.OperationalError as exc:  # another process added it first
                if "duplicate column" not in str(exc):
                    raise

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> ServeStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    # -- services -------------------------------------------------------------

    def add_service(self, service: Service) -> None:
        row = _encode(service)
        cols = ", ".join(row)
        with self._tx() as tx:
            if tx.execute("SELECT 1 FROM services WHERE name = ?", (service.name,)).fetchone():
                raise StateError(f"service {service.name} already exists",
                                 hint=f"take it down first (`skyc serve down {service.name}`)"
                                 ", or give this one another name with -n")
            tx.execute(f"INSERT INTO services ({cols}) VALUES ({', '.join('?' * len(row))})",
                       tuple(row.values()))
            tx.execute("INSERT OR REPLACE INTO versions VALUES (?, ?, ?)",
                       (service.name, service.version, row["config"]))

    def service(self, name: str) -> Service | None:
        row = self.conn.execute("SELECT * FROM services WHERE name = ?", (name,)).fetchone()
        return None if row is None else _decode(Service, row)

    def services(self) -> list[Service]:
        rows = self.conn.execute("SELECT * FROM services ORDER BY created_at, name").fetchall()
        return [_decode(Service, r) for r in rows]

    def update_service(self, name: str, **values: Any) -> None:
        sets, args = _assignments(values)
        self.conn.execute(f"UPDATE services SET {sets} WHERE name = ?", (*args, name))

    def new_version(self, name: str, record: Callable[[int], dict[str, Any]]) -> int:
        """Record the service's next version: ``record(version)`` gives the values that
        go with it, its ``config`` among them (called inside the transaction, so two
        updates never share one)."""
        with self._tx() as tx:
            row = tx.execute("SELECT version FROM services WHERE name = ?", (name,)).fetchone()
            if row is None:
                raise StateError(f"no service {name}")
            version = int(row[0]) + 1
            values = {"version": version, **record(version)}
            sets, args = _assignments(values)
            tx.execute(f"UPDATE services SET {sets} WHERE name = ?", (*args, name))
            tx.execute("INSERT OR REPLACE INTO versions VALUES (?, ?, ?)",
                       (name, version, json.dumps(values["config"], sort_keys=True)))
        return version

    def version_config(self, name: str, version: int) -> dict[str, Any] | None:
        """The config a version of the service was recorded with (None for one
        recorded before versions were kept)."""
        row = self.conn.execute("SELECT config FROM versions WHERE service = ? AND "
                                "version = ?", (name, version)).fetchone()
        return None if row is None else dict(json.loads(row[0]))

    def finish_update(self, name: str, version: int) -> bool:
        """The update to ``version`` is done (unless a later one was recorded since)."""
        cursor = self.conn.execute(
            "UPDATE services SET update_mode = NULL WHERE name = ? AND version = ? "
            "AND update_mode IS NOT NULL", (name, version))
        return cursor.rowcount > 0

    def take_replica_id(self, name: str) -> int:
        with self._tx() as tx:
            row = tx.execute("SELECT next_replica FROM services WHERE name = ?",
                             (name,)).fetchone()
            if row is None:
                raise StateError(f"no service {name}")
            tx.execute("UPDATE services SET next_replica = ? WHERE name = ?",
                       (row[0] + 1, name))
            return int(row[0])

    def remove_service(self, name: str) -> None:
        with self._tx() as tx:
            for table, key in (("replicas", "service"), ("decisions", "service"),
                               ("versions", "service"), ("services", "name")):
                tx.execute(f"DELETE FROM {table} WHERE {key} = ?", (name,))

    # -- replicas -------------------------------------------------------------

    def put_replica(self, replica: Replica) -> None:
        row = _encode(replica)
        cols = ", ".join(row)
        self.conn.execute(
            f"INSERT OR REPLACE INTO replicas ({cols}) VALUES ({', '.join('?' * len(row))})",
            tuple(row.values()))

    def replicas(self, service: str) -> list[Replica]:
        rows = self.conn.execute("SELECT * FROM replicas WHERE service = ? ORDER BY id",
                                 (service,)).fetchall()
        return [_decode(Replica, r) for r in rows]

    def all_replicas(self) -> list[Replica]:
        rows = self.conn.execute("SELECT * FROM replicas ORDER BY service, id").fetchall()
        return [_decode(Replica, r) for r in rows]

    def remove_replica(self, service: str, replica_id: int) -> None:
        self.conn.execute("DELETE FROM replicas WHERE service = ? AND id = ?",
                          (service, replica_id))

    # -- decisions ------------------------------------------------------------

    def add_decision(self, service: str, decision: Decision) -> None:
        self.conn.execute("INSERT INTO decisions VALUES (?, ?, ?, ?, ?)",
                          (service, decision.at, decision.before, decision.after,
                           decision.reason))

    def decisions(self, service: str, last: int = 20) -> list[Decision]:
        rows = self.conn.execute(
            "SELECT at, before, after, reason FROM decisions WHERE service = ? "
            "ORDER BY at DESC LIMIT ?", (service, last)).fetchall()
        return [Decision(*r) for r in reversed(rows)]
