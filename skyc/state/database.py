"""Local state: clusters, their jobs and their event trail, in ``$SKYC_HOME/state.db``.

sqlite (stdlib) in WAL mode with a busy timeout, so several skyc processes can
read and write at once. Structured columns hold JSON documents wrapped with a
version (``{"v": 1, "data": ...}``); never pickles. The schema version lives in
``PRAGMA user_version`` and :data:`MIGRATIONS` brings an older database up to
date when it is opened. Values under secret-looking keys (passwords, tokens,
private keys) are replaced by ``"<redacted>"`` before anything is written.

The file is 0600. After each change of a cluster's lifecycle and before each
migration a checked copy is kept in ``state.db.bak`` (:func:`backup_path`); one kept
from before the database was found empty is renamed ``state.db.bak-<time>``, and
:func:`restore_state` (``skyc state restore``) puts a copy back. A damaged, full,
locked or read-only file is a :class:`~skyc.errors.StateError` naming it and the way
out (:func:`file_error`); a read-only ``SKYC_HOME`` is read, never written.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skyc.errors import StateError
from skyc.state.dbfile import (
    backup_path,
    connect,
    default_path,
    file_error,
    kept_backups,
    open_read_only,
    prepare_file,
    read_only_error,
    recovery_hint,
    restore_state,
    stamp,
    temp_beside,
    write_copy,
)
from skyc.state.migrations import MIGRATIONS, SCHEMA_VERSION, migrate, user_version
from skyc.state.records import (
    CLUSTER_STATUSES,
    JOB_STATUSES,
    TERMINAL_JOB_STATUSES,
    ClusterRecord,
    ClusterStatus,
    EventRecord,
    JobRecord,
    JobStatus,
    check_value,
    cluster_from_row,
    dump_payload,
    job_from_row,
    job_status_from_node,
    load_payload,
    redact,
)

if TYPE_CHECKING:
    from skyc.model.nodes import ClusterInfo
    from skyc.optimizer.plan import Placement
# -- the database ------------------------------------------------------------


class StateDB:
    """Typed access to ``state.db``. Safe to use from several processes at once.

    On a read-only ``SKYC_HOME`` it reads (``read_only``) and refuses every write
    with a :class:`StateError` naming the file. A failure of the file itself
    (damaged, full, locked) is a :class:`StateError` that says how to recover.
    After each change of a cluster's lifecycle (recorded, new status, forgotten) and
    before each migration it keeps a checked copy in :func:`backup_path`."""

    def __init__(self, path: Path | None = None) -> None:
        if path is None:
            from skyc.settings.home import ensure_home

            path = ensure_home() / "state.db"
        self.path = path
        self.read_only = False
        self._lock = threading.RLock()
        self._conn = self._open()

    def _open(self) -> sqlite3.Connection:
        if not prepare_file(self.path):
            self.read_only = True
            return open_read_only(self.path)
        self._conn = connect(self.path)
        try:
            self._migrate()
        except sqlite3.Error as exc:
            self._conn.close()
            raise file_error(self.path, exc) or StateError(
                f"state database {self.path} is unreadable: {exc}",
                hint=recovery_hint(self.path)) from None
        except BaseException:
            self._conn.close()
            raise
        return self._conn

    def _migrate(self) -> None:
        version = user_version(self._conn)
        if version == 0:
            self._keep_earlier_backup()
        elif version < SCHEMA_VERSION:
            self.backup()
        migrate(self._conn)

    def _keep_earlier_backup(self) -> None:
        """An empty database (new, or emptied): a copy kept from before it is renamed,
        so that this database's copies do not replace it."""
        latest = backup_path(self.path)
        with contextlib.suppress(OSError):
            if latest.exists():
                os.replace(latest, latest.with_name(f"{latest.name}-{stamp()}"))

    def backup(self) -> Path | None:
        """Rewrite :func:`backup_path` with a checked copy of the database; None when
        none could be written (read-only, full, damaged), the database unchanged."""
        if self.read_only:
            return None
        target = backup_path(self.path)
        tmp = temp_beside(target)
        try:
            with self._lock:
                write_copy(self._conn, tmp, "DELETE")
            os.replace(tmp, target)
        except (OSError, sqlite3.Error, StateError):
            return None
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
        return target

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> StateDB:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        if self.read_only:
            raise read_only_error(self.path)
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    yield self._conn
                except BaseException:
                    if self._conn.in_transaction:
                        self._conn.execute("ROLLBACK")
                    raise
                self._conn.execute("COMMIT")
            except sqlite3.Error as exc:
                error = file_error(self.path, exc)
                if error is None:
                    raise
                raise error from None

    def transaction(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        """One write transaction (for tables kept by other modules, e.g. managed jobs)."""
        return self._write()

    def query(self, sql: str, args: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        """Rows of one read."""
        return self._read(sql, args)

    def _read(self, sql: str, args: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        with self._lock:
            try:
                return list(self._conn.execute(sql, args).fetchall())
            except sqlite3.Error as exc:
                error = file_error(self.path, exc)
                if error is None:
                    raise
                raise error from None

    # clusters --------------------------------------------------------------

    def upsert_cluster(self, record: ClusterRecord) -> None:
        now = time.time()
        row = (
            record.name, record.status, record.cloud, record.region, record.zone,
            dump_payload(record.placement), record.workspace, record.engine,
            dump_payload(record.nodes),
            record.launched_at, record.hourly_cost, record.last_job, now,
        )
        with self._write() as conn:
            before = _status_of(conn, record.name)
            conn.execute(
                """
                INSERT INTO clusters (name, status, cloud, region, zone, placement, workspace,
                    engine, nodes, launched_at, hourly_cost, last_job, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (name) DO UPDATE SET
                    status = excluded.status, cloud = excluded.cloud,
                    region = excluded.region, zone = excluded.zone,
                    placement = excluded.placement, workspace = excluded.workspace,
                    engine = excluded.engine, nodes = excluded.nodes,
                    launched_at = excluded.launched_at, hourly_cost = excluded.hourly_cost,
                    last_job = COALESCE(excluded.last_job, clusters.last_job),
                    updated_at = excluded.updated_at
                """,
                row,
            )
        if before != record.status:
            self.backup()

    def upsert_cluster_from_placement(
        self,
        name: str,
        placement: Placement,
        *,
        status: ClusterStatus = "INIT",
        engine: str | None = None,
        workspace: str | None = None,
    ) -> ClusterRecord:
        """Record that cluster ``name`` is (being) placed at ``placement``.

        Keeps what is still true of an existing record (launch time, last job,
        engine, workspace); the nodes are kept only if the placement is unchanged.
        """
        from skyc.settings.home import skyc_home

        placement_doc = placement.model_dump(mode="json")
        old = self.get_cluster(name)
        same_place = old is not None and old.placement == placement_doc
        record = ClusterRecord(
            name=name, status=status, cloud=placement.cloud, region=placement.region,
            zone=placement.zone, placement=placement_doc,
            workspace=workspace or (old.workspace if old else None)
            or str(skyc_home() / "clusters" / name),
            engine=engine or (old.engine if old else None),
            nodes=old.nodes if (old is not None and same_place) else [],
            launched_at=old.launched_at if old else None,
            hourly_cost=placement.hourly_cost,
            last_job=old.last_job if old else None,
        )
        self.upsert_cluster(record)
        return record

    def mark_cluster_up(
        self, name: str, info: ClusterInfo, placement: Placement
    ) -> ClusterRecord:
        """Record a provisioned cluster: status UP, its nodes, placement and cost."""
        old = self.get_cluster(name)
        placement_doc = placement.model_dump(mode="json")
        # The launch time survives a relaunch onto the same nodes, not a move.
        launched = (
            old.launched_at
            if old is not None and old.nodes and old.placement == placement_doc
            else None
        )
        record = ClusterRecord(
            name=name, status="UP", cloud=info.cloud, region=info.region, zone=info.zone,
            placement=placement_doc, workspace=info.workspace,
            engine=old.engine if old else None,
            nodes=[n.model_dump(mode="json", exclude_none=True) for n in info.nodes],
            launched_at=launched or time.time(), hourly_cost=placement.hourly_cost,
            last_job=old.last_job if old else None,
        )
        self.upsert_cluster(record)
        return record

    def get_cluster(self, name: str) -> ClusterRecord | None:
        rows = self._read("SELECT * FROM clusters WHERE name = ?", (name,))
        return cluster_from_row(rows[0]) if rows else None

    def list_clusters(self) -> list[ClusterRecord]:
        return [cluster_from_row(r) for r in self._read("SELECT * FROM clusters ORDER BY name")]

    def set_cluster_status(self, name: str, status: ClusterStatus) -> None:
        check_value(status, ClusterStatus, "cluster status")
        with self._write() as conn:
            before = _status_of(conn, name)
            cur = conn.execute(
                "UPDATE clusters SET status = ?, updated_at = ? WHERE name = ?",
                (status, time.time(), name),
            )
            if cur.rowcount == 0:
                raise StateError(f"no cluster named '{name}' in the state database")
        if before != status:
            self.backup()

    def remove_cluster(self, name: str) -> bool:
        """Forget a cluster with its jobs and events; False if it was not there."""
        with self._write() as conn:
            cur = conn.execute("DELETE FROM clusters WHERE name = ?", (name,))
            conn.execute("DELETE FROM jobs WHERE cluster = ?", (name,))
            conn.execute("DELETE FROM events WHERE cluster = ?", (name,))
            removed = cur.rowcount > 0
        if removed:
            self.backup()
        return removed

    # jobs ------------------------------------------------------------------

    def add_job(
        self,
        cluster: str,
        name: str | None = None,
        *,
        status: JobStatus = "PENDING",
        log_path: str | None = None,
        job_id: int | None = None,
    ) -> int:
        """Record a new job on ``cluster``; it becomes the cluster's ``last_job``.

        ``job_id`` is the id the cluster gave the job; returns the row's id."""
        now = time.time()
        check_value(status, JobStatus, "job status")
        with self._write() as conn:
            cur = conn.execute(
                "INSERT INTO jobs (cluster, name, status, submitted_at, started_at, exit_codes,"
                " log_path, job_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (cluster, name, status, now, now if status == "RUNNING" else None,
                 dump_payload({}), log_path, job_id),
            )
            job_id = int(cur.lastrowid or 0)
            conn.execute("UPDATE clusters SET last_job = ? WHERE name = ?", (job_id, cluster))
        return job_id

    def update_job(
        self,
        job_id: int,
        *,
        status: JobStatus | None = None,
        exit_codes: dict[str, int] | None = None,
        log_path: str | None = None,
    ) -> JobRecord:
        """Change a job; RUNNING stamps ``started_at``, a final status ``ended_at``."""
        with self._write() as conn:
            rows = conn.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchall()
            if not rows:
                raise StateError(f"no job with id {job_id} in the state database")
            job = job_from_row(rows[0])
            now = time.time()
            changes: dict[str, Any] = {}
            if status is not None:
                check_value(status, JobStatus, "job status")
                changes["status"] = status
                if status == "RUNNING" and job.started_at is None:
                    changes["started_at"] = now
                if status in TERMINAL_JOB_STATUSES and job.ended_at is None:
                    changes["ended_at"] = now
            if exit_codes is not None:
                changes["exit_codes"] = exit_codes
            if log_path is not None:
                changes["log_path"] = log_path
            job = JobRecord.model_validate({**job.model_dump(), **changes})
            conn.execute(
                "UPDATE jobs SET status = ?, started_at = ?, ended_at = ?, exit_codes = ?,"
                " log_path = ? WHERE id = ?",
                (job.status, job.started_at, job.ended_at, dump_payload(job.exit_codes),
                 job.log_path, job_id),
            )
        return job

    def get_job(self, job_id: int) -> JobRecord | None:
        rows = self._read("SELECT * FROM jobs WHERE id = ?", (job_id,))
        return job_from_row(rows[0]) if rows else None

    def find_job(self, cluster: str, job_id: int) -> JobRecord | None:
        """The job that cluster ``cluster`` knows as ``job_id``."""
        rows = self._read("SELECT * FROM jobs WHERE cluster = ? AND job_id = ?",
                          (cluster, job_id))
        return job_from_row(rows[0]) if rows else None

    def reconcile_jobs(self, cluster: str, observed: dict[int, str]) -> list[JobRecord]:
        """Bring unfinished job records in line with what the nodes report (cluster job
        id -> status). A finished record is history and is never changed. On a
        read-only SKYC_HOME the records stay as they are (the caller shows the nodes'
        view)."""
        changed: list[JobRecord] = []
        if self.read_only:
            return changed
        for job in self.list_jobs(cluster):
            if job.job_id is None or job.status in TERMINAL_JOB_STATUSES:
                continue
            seen = observed.get(job.job_id)
            status = job_status_from_node(seen) if seen is not None else None
            if status is not None and status != job.status:
                changed.append(self.update_job(job.id, status=status))
        return changed

    def list_jobs(self, cluster: str) -> list[JobRecord]:
        rows = self._read("SELECT * FROM jobs WHERE cluster = ? ORDER BY id", (cluster,))
        return [job_from_row(r) for r in rows]

    # events ----------------------------------------------------------------

    def add_event(
        self, cluster: str, kind: str, message: str, data: dict[str, Any] | None = None
    ) -> int:
        with self._write() as conn:
            cur = conn.execute(
                "INSERT INTO events (cluster, ts, kind, message, data) VALUES (?, ?, ?, ?, ?)",
                (cluster, time.time(), kind, message, None if data is None else dump_payload(data)),
            )
            return int(cur.lastrowid or 0)

    def events(self, cluster: str) -> list[EventRecord]:
        rows = self._read("SELECT * FROM events WHERE cluster = ? ORDER BY id", (cluster,))
        return [
            EventRecord(
                id=r["id"], cluster=r["cluster"], ts=r["ts"], kind=r["kind"],
                message=r["message"], data=load_payload(r["data"], f"event {r['id']} data"),
            )
            for r in rows
        ]


def _status_of(conn: sqlite3.Connection, name: str) -> str | None:
    row = conn.execute("SELECT status FROM clusters WHERE name = ?", (name,)).fetchone()
    return None if row is None else str(row[0])


__all__ = [
    "CLUSTER_STATUSES",
    "JOB_STATUSES",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "TERMINAL_JOB_STATUSES",
    "ClusterRecord",
    "ClusterStatus",
    "EventRecord",
    "JobRecord",
    "JobStatus",
    "StateDB",
    "backup_path",
    "connect",
    "default_path",
    "file_error",
    "job_status_from_node",
    "kept_backups",
    "migrate",
    "redact",
    "restore_state",
]
