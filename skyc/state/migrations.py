"""The state database's schema and its migrations, one list for both dialects (written
in sqlite's words, said in PostgreSQL's by :mod:`skyc.state.dialect`). The version lives
in sqlite's ``PRAGMA user_version``, and in PostgreSQL's table ``skyc_schema``
(:mod:`skyc.state.pg_store`); :data:`MIGRATIONS` brings an older database up to date
when it is opened, in one transaction."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

from skyc.errors import StateError
from skyc.state.dialect import SQLITE, Dialect, Row, Tx, split_statements

# -- schema migrations -------------------------------------------------------


def _m1_initial(tx: Tx) -> None:
    tx.script(_M1_SQL)


_M1_SQL = """
        CREATE TABLE clusters (
            name TEXT PRIMARY KEY,
            status TEXT NOT NULL,
            cloud TEXT NOT NULL,
            region TEXT,
            zone TEXT,
            placement TEXT NOT NULL,
            workspace TEXT,
            engine TEXT,
            nodes TEXT NOT NULL,
            launched_at REAL,
            hourly_cost REAL NOT NULL DEFAULT 0,
            updated_at REAL NOT NULL
        );
        CREATE TABLE jobs (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            cluster TEXT NOT NULL,
            name TEXT,
            status TEXT NOT NULL,
            submitted_at REAL NOT NULL,
            started_at REAL,
            ended_at REAL,
            exit_codes TEXT NOT NULL,
            log_path TEXT
        );
        CREATE TABLE events (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            cluster TEXT NOT NULL,
            ts REAL NOT NULL,
            kind TEXT NOT NULL,
            message TEXT NOT NULL,
            data TEXT
        );
"""


def _m2_last_job_and_indexes(tx: Tx) -> None:
    tx.script("""
        ALTER TABLE clusters ADD COLUMN last_job INTEGER;
        CREATE INDEX jobs_by_cluster ON jobs (cluster, id);
        CREATE INDEX events_by_cluster ON events (cluster, id)
    """)
    tx.execute(
        "UPDATE clusters SET last_job = "
        "(SELECT MAX(id) FROM jobs WHERE jobs.cluster = clusters.name)"
    )


def _m3_cluster_job_ids(tx: Tx) -> None:
    """Jobs carry the id their cluster gave them (the one queue and logs accept)."""
    tx.script("""
        ALTER TABLE jobs ADD COLUMN job_id INTEGER;
        CREATE UNIQUE INDEX jobs_by_cluster_job ON jobs (cluster, job_id)
    """)


def _m4_managed_jobs(tx: Tx) -> None:
    """Managed jobs, their attempts and their trail: history that outlives clusters."""
    tx.script(_M4_SQL)


_M4_SQL = """
        CREATE TABLE managed_jobs (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            name TEXT,
            status TEXT NOT NULL,
            task_path TEXT NOT NULL,
            spec TEXT NOT NULL,
            num_tasks INTEGER NOT NULL DEFAULT 1,
            task_index INTEGER NOT NULL DEFAULT 0,
            restarts INTEGER NOT NULL DEFAULT 0,
            recoveries INTEGER NOT NULL DEFAULT 0,
            cluster TEXT,
            cluster_job INTEGER,
            failure TEXT,
            cancel_requested INTEGER NOT NULL DEFAULT 0,
            lease_owner TEXT,
            lease_until REAL,
            controller_pid INTEGER,
            submitted_at REAL NOT NULL,
            started_at REAL,
            ended_at REAL,
            updated_at REAL NOT NULL
        );
        CREATE TABLE managed_attempts (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            job INTEGER NOT NULL REFERENCES managed_jobs (id) ON DELETE CASCADE,
            task_index INTEGER NOT NULL,
            cluster TEXT NOT NULL,
            infra TEXT,
            hourly_cost REAL NOT NULL DEFAULT 0,
            cluster_job INTEGER,
            outcome TEXT,
            started_at REAL NOT NULL,
            ended_at REAL
        );
        CREATE TABLE managed_events (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            job INTEGER NOT NULL REFERENCES managed_jobs (id) ON DELETE CASCADE,
            ts REAL NOT NULL,
            status TEXT NOT NULL,
            message TEXT NOT NULL,
            data TEXT
        );
        CREATE INDEX managed_attempts_by_job ON managed_attempts (job, id);
        CREATE INDEX managed_events_by_job ON managed_events (job, id)
"""


def _m5_owners(tx: Tx) -> None:
    """Who each cluster, job and managed job belongs to, and who did what each event
    records (NULL in the rows written before: read as the caller's own)."""
    tx.script("""
        ALTER TABLE clusters ADD COLUMN owner TEXT;
        ALTER TABLE jobs ADD COLUMN owner TEXT;
        ALTER TABLE managed_jobs ADD COLUMN owner TEXT;
        ALTER TABLE events ADD COLUMN actor TEXT
    """)


def _m6_storage(tx: Tx) -> None:
    """The buckets skyc created: their store, whether they outlive clusters, which
    cluster made them and which clusters mount them."""
    tx.script(_M6_SQL)


def _m7_cluster_keys(tx: Tx) -> None:
    """Each cluster's SSH public key (its stack's input, not a secret), so a teammate's
    or a CI job's plan of the cluster builds the stack it has, from any machine."""
    tx.script("ALTER TABLE clusters ADD COLUMN ssh_public_key TEXT")


def _m8_networks(tx: Tx) -> None:
    """The networks skyc keeps for many clusters (a region's VPC): their stack, the zones
    they hold a subnet in, their outputs, and which clusters use them."""
    tx.script(_M8_SQL)


_M8_SQL = """
        CREATE TABLE networks (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            name TEXT NOT NULL UNIQUE,
            cloud TEXT NOT NULL,
            region TEXT NOT NULL,
            status TEXT NOT NULL,
            zones TEXT NOT NULL,
            users TEXT NOT NULL,
            outputs TEXT,
            workspace TEXT,
            engine TEXT,
            owner TEXT,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL
        )
"""

_M6_SQL = """
        CREATE TABLE storage (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            name TEXT NOT NULL UNIQUE,
            store TEXT NOT NULL,
            region TEXT,
            url TEXT NOT NULL,
            status TEXT NOT NULL,
            persistent INTEGER NOT NULL,
            cluster TEXT,
            users TEXT NOT NULL,
            workspace TEXT,
            engine TEXT,
            owner TEXT,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL
        )
"""


# MIGRATIONS[i] takes a database from version i to i + 1.
MIGRATIONS: list[Callable[[Tx], None]] = [
    _m1_initial,
    _m2_last_job_and_indexes,
    _m3_cluster_job_ids,
    _m4_managed_jobs,
    _m5_owners,
    _m6_storage,
    _m7_cluster_keys,
    _m8_networks,
]
SCHEMA_VERSION = len(MIGRATIONS)
# The tables, parents before children (the order a copy writes them in).
TABLES = ("clusters", "jobs", "events", "managed_jobs", "managed_attempts", "managed_events",
          "storage", "networks")


def newer_schema_error(version: int, where: str | None = None) -> StateError:
    """A database that a newer skyc migrated (``where``: the file or the URL, without
    its password)."""
    named = "state database" if where is None else f"the state database {where} has"
    return StateError(
        f"{named} schema version {version} is newer than this skyc understands "
        f"({SCHEMA_VERSION})",
        hint="upgrade skyc (everyone sharing this state needs the same or a newer one), "
        "or point SKYC_HOME or SKYC_STATE_URL elsewhere",
    )


# -- sqlite's connection as a transaction -----------------------------------------


class SqliteTx:
    """:class:`~skyc.state.dialect.Tx` on a sqlite connection (autocommit mode: the
    caller opens and ends the transaction)."""

    dialect: Dialect = SQLITE

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def execute(self, sql: str, args: Sequence[Any] = ()) -> int:
        return self.conn.execute(sql, tuple(args)).rowcount

    def insert(self, sql: str, args: Sequence[Any] = ()) -> int:
        return int(self.conn.execute(sql, tuple(args)).lastrowid or 0)

    def rows(self, sql: str, args: Sequence[Any] = ()) -> list[Row]:
        cur = self.conn.execute(sql, tuple(args))
        names = [d[0] for d in cur.description or ()]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]

    def script(self, sql: str) -> None:
        # One statement at a time: executescript() would commit the open transaction.
        for statement in split_statements(sql):
            self.conn.execute(statement)


def user_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def migrate(conn: sqlite3.Connection, upto: int = SCHEMA_VERSION) -> int:
    """Apply pending migrations to a sqlite database (in one write transaction);
    return the new version."""
    version = user_version(conn)
    if version > SCHEMA_VERSION:
        raise newer_schema_error(version)
    if version >= upto:
        return version
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = user_version(conn)
        if version > SCHEMA_VERSION:
            raise newer_schema_error(version)
        for step in range(version, upto):
            MIGRATIONS[step](SqliteTx(conn))
            conn.execute(f"PRAGMA user_version = {step + 1}")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return max(version, upto)
