"""The state: clusters, their jobs and their event trail, in ``$SKYC_HOME/state.db``
(sqlite, the default) or in a team's PostgreSQL database (``state:`` in the config, or
``SKYC_STATE_URL``: :mod:`skyc.settings.state_url`). :class:`StateDB` writes its SQL once; the
store under it (:mod:`skyc.state.sqlite_store`, :mod:`skyc.state.pg_store`) says it in
its dialect (:mod:`skyc.state.dialect`).

Several skyc processes can read and write at once; each write is one transaction (all
of it, or nothing). Structured columns hold JSON documents wrapped with a version
(``{"v": 1, "data": ...}``); never pickles. The schema's version and
:data:`MIGRATIONS`, which bring an older database up to date when it is opened, are in
:mod:`skyc.state.migrations`. Values under secret-looking keys (passwords, tokens,
private keys) are replaced by ``"<redacted>"`` before anything is written.

The sqlite file is 0600. After each change of a cluster's lifecycle and before each
migration a checked copy of it is kept in ``state.db.bak`` (:func:`backup_path`); one
kept from before the database was found empty is renamed ``state.db.bak-<time>``, and
:func:`restore_state` (``skyc state restore``) puts a copy back. A damaged, full,
locked or read-only file is a :class:`~skyc.errors.StateError` naming it and the way
out (:func:`file_error`); a read-only ``SKYC_HOME`` is read, never written. A
PostgreSQL database that cannot be reached, refuses the credentials or has a newer
schema is a :class:`~skyc.errors.StateError` naming its URL without the password.
"""

from __future__ import annotations

import contextlib
import stat
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skyc.errors import StateError
from skyc.state.dbfile import (
    backup_path,
    connect,
    default_path,
    file_error,
    kept_backups,
    restore_state,
)
from skyc.state.dialect import Row, Store, Tx
from skyc.state.migrations import MIGRATIONS, SCHEMA_VERSION, migrate
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
    event_from_row,
    job_from_row,
    job_status_from_node,
    owned_by,
    redact,
)

if TYPE_CHECKING:
    from collections.abc import Iterable

    from skyc.model.nodes import ClusterInfo
    from skyc.model.plan import Placement
# -- the database ------------------------------------------------------------

_IN_CHUNK = 500   # ids per ``IN (...)`` (sqlite allows 32766 parameters, older ones 999)


def open_store(path: Path | None = None, url: str | None = None) -> Store:
    """The sqlite file ``path``, or the PostgreSQL database ``url``; with neither, the
    state this user configured (``SKYC_STATE_URL``, the config's ``state:``, else
    ``$SKYC_HOME/state.db``)."""
    if path is None and url is None:
        from skyc.settings.state_url import state_url

        url = state_url()
    if url is not None:
        from skyc.state.pg_store import PostgresStore

        return PostgresStore(url)
    from skyc.state.sqlite_store import SqliteStore

    if path is None:
        from skyc.settings.home import ensure_home

        path = ensure_home() / "state.db"
    return SqliteStore(path)


_SNIFF = 8 << 20   # as much of the config as load_config reads
_callers: dict[tuple[str, int, int, int], str] = {}


def caller() -> str:
    """Who this skyc acts for: the config's ``user:``, else ``user@host``
    (:mod:`skyc.model.owner`). A config that never says "user" cannot set it: such a
    file is not parsed here (exec and status stay as quick as without one)."""
    from skyc.model.owner import default_owner
    from skyc.settings.home import config_path

    path = config_path()
    try:
        seen = path.stat()
    except OSError:
        return default_owner()  # no config
    data = b"user"  # not a regular file: load_config says what is wrong with it
    if stat.S_ISREG(seen.st_mode):
        with contextlib.suppress(OSError), path.open("rb") as fh:
            data = fh.read(_SNIFF + 1)
    if b"user" not in data and len(data) <= _SNIFF:
        return default_owner()
    key = (str(path), seen.st_mtime_ns, seen.st_size, seen.st_ino)
    if key not in _callers:
        from skyc.model.owner import owner
        from skyc.settings.config import load_config

        _callers[key] = owner(load_config(path))
    return _callers[key]


def first_owner(workspace: str | None, who: str) -> str:
    """Whose a cluster is when it is first recorded: the owner its workspace recorded
    (:func:`skyc.model.workspace.recorded_owner`), else ``who`` (a new cluster's
    workspace records that owner when its stack is written)."""
    from skyc.model.workspace import recorded_owner

    return (recorded_owner(Path(workspace)) if workspace else None) or who


def existing_state() -> StateDB | None:
    """The state this user configured when there is one to read: the PostgreSQL
    database it names, else ``$SKYC_HOME/state.db`` when that file exists (None when it
    does not: a reader, such as plan, never creates it)."""
    from skyc.settings.state_url import state_url

    url = state_url()
    if url is not None:
        return StateDB(url=url)
    from skyc.settings.home import skyc_home

    path = skyc_home() / "state.db"
    return StateDB(path) if path.exists() else None


class StateDB:
    """Typed access to the state. Safe to use from several processes at once.

    ``StateDB()`` opens the state this user configured; ``StateDB(path)`` the sqlite
    file ``path``; ``StateDB(url=...)`` a PostgreSQL database. ``where`` names it in
    messages (a file, or a URL without its password); ``path`` is the sqlite file (None
    on PostgreSQL). On a read-only ``SKYC_HOME`` it reads (``read_only``) and refuses
    every write. After each change of a cluster's lifecycle (recorded, new status,
    forgotten) the sqlite store keeps a checked copy in :func:`backup_path`."""

    def __init__(self, path: Path | None = None, *, url: str | None = None) -> None:
        self.store = open_store(path, url)
        self.path = self.store.path
        self.where = self.store.where
        self.kind = self.store.dialect.kind
        self._caller: str | None = None

    def caller(self) -> str:
        """Who this skyc acts for (:func:`caller`, read once): the owner of what it
        records and the actor of each event."""
        if self._caller is None:
            self._caller = caller()
        return self._caller

    @property
    def read_only(self) -> bool:
        return self.store.read_only

    def backup(self) -> Path | None:
        """A checked copy of a sqlite state (:func:`backup_path`); None when none was
        written (read-only, full, damaged, or a PostgreSQL state)."""
        return self.store.backup()

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> StateDB:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _write(self) -> contextlib.AbstractContextManager[Tx]:
        return self.store.transaction()

    def transaction(self) -> contextlib.AbstractContextManager[Tx]:
        """One write transaction (for tables kept by other modules, e.g. managed jobs)."""
        return self.store.transaction()

    def query(self, sql: str, args: tuple[Any, ...] = ()) -> list[Row]:
        """Rows of one read."""
        return self.store.read(sql, args)

    def _read(self, sql: str, args: tuple[Any, ...] = ()) -> list[Row]:
        return self.store.read(sql, args)

    # clusters --------------------------------------------------------------

    def upsert_cluster(self, record: ClusterRecord) -> None:
        """Record the cluster, or update its record. Its owner is set when it is first
        recorded (``record.owner``, else :func:`first_owner`) and never changed."""
        now = time.time()
        row = (
            record.name, record.status, record.cloud, record.region, record.zone,
            dump_payload(record.placement), record.workspace, record.engine,
            dump_payload(record.nodes),
            record.launched_at, record.hourly_cost, record.last_job, now,
        )
        with self._write() as conn:
            before = _status_of(conn, record.name)
            # An update keeps the owner: it is looked up only for a new record.
            owner = record.owner or (None if before is not None else
                                     first_owner(record.workspace, self.caller()))
            conn.execute(
                """
                INSERT INTO clusters (name, status, cloud, region, zone, placement, workspace,
                    engine, nodes, launched_at, hourly_cost, last_job, updated_at, owner)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (name) DO UPDATE SET
                    status = excluded.status, cloud = excluded.cloud,
                    region = excluded.region, zone = excluded.zone,
                    placement = excluded.placement, workspace = excluded.workspace,
                    engine = excluded.engine, nodes = excluded.nodes,
                    launched_at = excluded.launched_at, hourly_cost = excluded.hourly_cost,
                    last_job = COALESCE(excluded.last_job, clusters.last_job),
                    updated_at = excluded.updated_at
                """,
                (*row, owner),
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
            owner=old.owner if old else None,
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
            last_job=old.last_job if old else None, owner=old.owner if old else None,
        )
        self.upsert_cluster(record)
        return record

    def get_cluster(self, name: str) -> ClusterRecord | None:
        rows = self._read("SELECT * FROM clusters WHERE name = ?", (name,))
        return cluster_from_row(rows[0]) if rows else None

    def list_clusters(self, *, owner: str | None = None) -> list[ClusterRecord]:
        """Every cluster; with ``owner``, only that owner's (and those recorded before
        owners were: :func:`~skyc.state.records.owned_by`)."""
        records = [cluster_from_row(r)
                   for r in self._read("SELECT * FROM clusters ORDER BY name")]
        return records if owner is None else [r for r in records
                                              if owned_by(r.owner, owner)]

    def set_cluster_key(self, name: str, public_key: str) -> None:
        """Record the SSH public key cluster ``name``'s stack was given."""
        with self._write() as conn:
            conn.execute("UPDATE clusters SET ssh_public_key = ? WHERE name = ?",
                         (public_key, name))

    def set_cluster_status(self, name: str, status: ClusterStatus) -> None:
        check_value(status, ClusterStatus, "cluster status")
        with self._write() as conn:
            before = _status_of(conn, name)
            changed = conn.execute(
                "UPDATE clusters SET status = ?, updated_at = ? WHERE name = ?",
                (status, time.time(), name),
            )
            if changed == 0:
                raise StateError(f"no cluster named '{name}' in the state database")
        if before != status:
            self.backup()

    def remove_cluster(self, name: str) -> bool:
        """Forget a cluster with its jobs and events; False if it was not there."""
        with self._write() as conn:
            removed = conn.execute("DELETE FROM clusters WHERE name = ?", (name,)) > 0
            conn.execute("DELETE FROM jobs WHERE cluster = ?", (name,))
            conn.execute("DELETE FROM events WHERE cluster = ?", (name,))
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
        owner: str | None = None,
    ) -> int:
        """Record a new job on ``cluster``; it becomes the cluster's ``last_job``.

        ``job_id`` is the id the cluster gave the job; ``owner`` who submitted it
        (default: :meth:`caller`); returns the row's id."""
        now = time.time()
        check_value(status, JobStatus, "job status")
        owner = owner or self.caller()
        with self._write() as conn:
            row = conn.insert(
                "INSERT INTO jobs (cluster, name, status, submitted_at, started_at, exit_codes,"
                " log_path, job_id, owner) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (cluster, name, status, now, now if status == "RUNNING" else None,
                 dump_payload({}), log_path, job_id, owner),
            )
            # The newest job wins when two are added at once (row ids only grow).
            conn.execute("UPDATE clusters SET last_job = ? WHERE name = ?"
                         " AND (last_job IS NULL OR last_job < ?)", (row, cluster, row))
        return row

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
            rows = conn.rows("SELECT * FROM jobs WHERE id = ?" + conn.dialect.for_update,
                             (job_id,))
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

    def jobs_by_id(self, ids: Iterable[int]) -> dict[int, JobRecord]:
        """The jobs with these row ids (a cluster listing's last jobs: a few reads, not
        one per cluster)."""
        wanted = sorted(set(ids))
        found: dict[int, JobRecord] = {}
        for start in range(0, len(wanted), _IN_CHUNK):
            chunk = tuple(wanted[start:start + _IN_CHUNK])
            marks = ", ".join("?" * len(chunk))
            for row in self._read(f"SELECT * FROM jobs WHERE id IN ({marks})", chunk):
                found[int(row["id"])] = job_from_row(row)
        return found

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
        self, cluster: str, kind: str, message: str, data: dict[str, Any] | None = None,
        *, actor: str | None = None,
    ) -> int:
        """Record an event of ``cluster``, done by ``actor`` (default: :meth:`caller`)."""
        actor = actor or self.caller()
        with self._write() as conn:
            return conn.insert(
                "INSERT INTO events (cluster, ts, kind, message, data, actor)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (cluster, time.time(), kind, message,
                 None if data is None else dump_payload(data), actor),
            )

    def last_events(self, kind: str) -> dict[str, EventRecord]:
        """Each cluster's newest event of ``kind`` (one read for every cluster)."""
        rows = self._read("SELECT * FROM events WHERE id IN (SELECT MAX(id) FROM events"
                          " WHERE kind = ? GROUP BY cluster)", (kind,))
        return {str(r["cluster"]): event_from_row(r) for r in rows}

    def events(self, cluster: str) -> list[EventRecord]:
        rows = self._read("SELECT * FROM events WHERE cluster = ? ORDER BY id", (cluster,))
        return [event_from_row(r) for r in rows]


def _status_of(conn: Tx, name: str) -> str | None:
    rows = conn.rows("SELECT status FROM clusters WHERE name = ?" + conn.dialect.for_update,
                     (name,))
    return str(rows[0]["status"]) if rows else None


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
    "caller",
    "connect",
    "default_path",
    "existing_state",
    "file_error",
    "first_owner",
    "job_status_from_node",
    "kept_backups",
    "migrate",
    "open_store",
    "owned_by",
    "redact",
    "restore_state",
]
