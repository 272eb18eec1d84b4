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
import errno
import json
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from skyc.errors import StateError

if TYPE_CHECKING:
    from skyc.model.nodes import ClusterInfo
    from skyc.optimizer.plan import Placement

ClusterStatus = Literal["INIT", "UP", "STOPPED", "FAILED"]
JobStatus = Literal["PENDING", "SETUP", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED"]
CLUSTER_STATUSES: tuple[str, ...] = get_args(ClusterStatus)
JOB_STATUSES: tuple[str, ...] = get_args(JobStatus)
TERMINAL_JOB_STATUSES: frozenset[str] = frozenset({"SUCCEEDED", "FAILED", "CANCELLED"})

PAYLOAD_VERSION = 1
BUSY_TIMEOUT_S = 30.0
_SECRET_KEY = re.compile(
    r"(secret|password|passwd|token|private_key|access_key|credential|api_key)", re.IGNORECASE
)
REDACTED = "<redacted>"


class _Model(BaseModel):
    # defer_build: a record's validator is built when a command first reads that kind of
    # record, not when the module is imported (start-up time).
    model_config = ConfigDict(extra="forbid", defer_build=True)


class ClusterRecord(_Model):
    """One cluster skyc launched (or is launching)."""

    name: str
    status: ClusterStatus = "INIT"
    cloud: str
    region: str | None = None
    zone: str | None = None
    placement: dict[str, Any] = Field(default_factory=dict)
    workspace: str | None = None          # $SKYC_HOME/clusters/<name>/
    engine: str | None = None             # terraform, tofu, pulumi, local
    nodes: list[dict[str, Any]] = Field(default_factory=list)  # name, rank, ip, ...
    launched_at: float | None = None      # epoch seconds
    hourly_cost: float = 0.0              # USD/hour, all nodes
    last_job: int | None = None           # id of the newest job on this cluster
    updated_at: float | None = None       # set by the database


class JobRecord(_Model):
    id: int                               # the database's row
    job_id: int | None = None             # the cluster's id for the job (queue, logs)
    cluster: str
    name: str | None = None
    status: JobStatus = "PENDING"
    submitted_at: float
    started_at: float | None = None
    ended_at: float | None = None
    exit_codes: dict[str, int] = Field(default_factory=dict)  # node name -> exit code
    log_path: str | None = None


class EventRecord(_Model):
    id: int
    cluster: str
    ts: float
    kind: str                            # apply, destroy, failover, attempt, ...
    message: str
    data: dict[str, Any] | None = None


def _check(value: str, allowed: Any, what: str) -> None:
    choices = get_args(allowed)
    if value not in choices:
        raise StateError(f"invalid {what} {value!r}: expected one of {', '.join(choices)}")


# -- versioned JSON payloads -------------------------------------------------


def redact(value: Any) -> Any:
    """A copy of ``value`` with secret-looking keys' values replaced."""
    if isinstance(value, dict):
        return {
            k: (REDACTED if isinstance(k, str) and _SECRET_KEY.search(k) else redact(v))
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact(v) for v in value]
    return value


def _dump(value: Any) -> str:
    return json.dumps({"v": PAYLOAD_VERSION, "data": redact(value)}, sort_keys=True)


def _load(text: str | None, where: str) -> Any:
    if text is None:
        return None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise StateError(f"state database: {where} holds invalid JSON: {exc}") from None
    if not isinstance(doc, dict) or "v" not in doc:
        raise StateError(f"state database: {where} is not a versioned payload")
    if doc["v"] != PAYLOAD_VERSION:
        raise StateError(
            f"state database: {where} has payload version {doc['v']}, this skyc reads "
            f"version {PAYLOAD_VERSION}",
            hint="upgrade skyc",
        )
    return doc.get("data")


# -- schema migrations -------------------------------------------------------


def _run_statements(conn: sqlite3.Connection, sql: str) -> None:
    # One statement at a time: executescript() would commit the open transaction.
    for statement in sql.split(";"):
        if statement.strip():
            conn.execute(statement)


def _m1_initial(conn: sqlite3.Connection) -> None:
    _run_statements(conn, _M1_SQL)


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


def _m2_last_job_and_indexes(conn: sqlite3.Connection) -> None:
    conn.execute("ALTER TABLE clusters ADD COLUMN last_job INTEGER")
    conn.execute("CREATE INDEX jobs_by_cluster ON jobs (cluster, id)")
    conn.execute("CREATE INDEX events_by_cluster ON events (cluster, id)")
    conn.execute(
        "UPDATE clusters SET last_job = "
        "(SELECT MAX(id) FROM jobs WHERE jobs.cluster = clusters.name)"
    )


def _m3_cluster_job_ids(conn: sqlite3.Connection) -> None:
    """Jobs carry the id their cluster gave them (the one queue and logs accept)."""
    conn.execute("ALTER TABLE jobs ADD COLUMN job_id INTEGER")
    conn.execute("CREATE UNIQUE INDEX jobs_by_cluster_job ON jobs (cluster, job_id)")


def _m4_managed_jobs(conn: sqlite3.Connection) -> None:
    """Managed jobs, their attempts and their trail: history that outlives clusters."""
    _run_statements(conn, _M4_SQL)


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


# MIGRATIONS[i] takes a database from user_version i to i + 1.
MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [
    _m1_initial,
    _m2_last_job_and_indexes,
    _m3_cluster_job_ids,
    _m4_managed_jobs,
]
SCHEMA_VERSION = len(MIGRATIONS)


def _user_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def _newer(version: int) -> StateError:
    return StateError(
        f"state database schema version {version} is newer than this skyc "
        f"understands ({SCHEMA_VERSION})",
        hint="upgrade skyc, or point SKYC_HOME at another directory",
    )


def migrate(conn: sqlite3.Connection, upto: int = SCHEMA_VERSION) -> int:
    """Apply pending migrations (in one write transaction); return the new version."""
    version = _user_version(conn)
    if version > SCHEMA_VERSION:
        raise _newer(version)
    if version >= upto:
        return version
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = _user_version(conn)
        if version > SCHEMA_VERSION:
            raise _newer(version)
        for step in range(version, upto):
            MIGRATIONS[step](conn)
            conn.execute(f"PRAGMA user_version = {step + 1}")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return max(version, upto)


# -- failures of the file itself ----------------------------------------------

# sqlite's primary result codes, and the words of its messages for them (before
# Python 3.11 an error carries only its message).
_BUSY, _READONLY, _IOERR, _CORRUPT, _FULL, _CANTOPEN, _NOTADB = 5, 8, 10, 11, 13, 14, 26
_WORDS = (("malformed", _CORRUPT), ("not a database", _NOTADB), ("readonly", _READONLY),
          ("disk is full", _FULL), ("is locked", _BUSY), ("unable to open", _CANTOPEN),
          ("disk i/o error", _IOERR))


def _code(exc: sqlite3.Error) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF
    text = str(exc).lower()
    return next((c for word, c in _WORDS if word in text), None)


def file_error(path: Path, exc: sqlite3.Error) -> StateError | None:
    """What a failure of the database file itself (damaged, read-only, full, locked,
    unopenable) means, naming the file and the way out; None for any other sqlite
    error, which is a bug and keeps its traceback."""
    code = _code(exc)
    if code == _IOERR and _no_space(path):
        code = _FULL
    if code in (_CORRUPT, _NOTADB):
        return StateError(f"the state database {path} is damaged ({exc})",
                          hint=recovery_hint(path))
    if code == _READONLY:
        return read_only_error(path)
    if code == _FULL:
        return StateError(
            f"cannot write the state database {path}: no space left on its device",
            hint=f"free space on the filesystem of {path.parent}, then run the command "
            "again (this change was not recorded)")
    if code == _BUSY:
        return StateError(
            f"the state database {path} stayed locked by another skyc process for "
            f"{BUSY_TIMEOUT_S:g}s", hint="wait for that command to finish, then try again")
    if code in (_CANTOPEN, _IOERR):
        return StateError(
            f"cannot use the state database {path} ({exc})",
            hint=f"{path.parent} must be a directory this user can write, on a filesystem "
            "with free space")
    return None


def _no_space(path: Path) -> bool:
    try:
        fs = os.statvfs(path.parent)
    except OSError:
        return False
    return fs.f_bavail == 0 or fs.f_favail == 0


def read_only_error(path: Path) -> StateError:
    return StateError(
        f"cannot write the state database {path}: {path.parent} is read-only",
        hint="run this command with a writable SKYC_HOME; plan, status, queue and logs "
        "work on a read-only one")


def recovery_hint(path: Path) -> str:
    """How to get the records of a damaged database back."""
    copies = kept_backups(path)
    if not copies:
        return (f"no copy of it was kept: move {path} aside (keep it), then adopt each "
                "cluster that `skyc status` lists as a workspace without a record "
                "(`skyc state adopt NAME`)")
    newest = copies[0]
    source = "" if newest == backup_path(path) else f" --from {newest}"
    return (f"restore the copy skyc kept ({newest}, {_age(newest)}) with `skyc state "
            f"restore{source}`; the damaged file is kept beside it")


def _age(path: Path) -> str:
    try:
        seen = path.stat().st_mtime
    except OSError:
        return "of unknown age"
    return "written " + time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(seen))


# -- copies of the database -----------------------------------------------------

BACKUP_SUFFIX = ".bak"


def default_path() -> Path:
    from skyc.settings.home import skyc_home

    return skyc_home() / "state.db"


def backup_path(path: Path) -> Path:
    """The copy of the database at ``path`` that skyc rewrites after each change of a
    cluster's lifecycle and before each migration (one file, no journal)."""
    return path.with_name(path.name + BACKUP_SUFFIX)


def kept_backups(path: Path) -> list[Path]:
    """The copies of the database at ``path``, newest first: the latest
    (``state.db.bak``) and those set aside when the database was found empty
    (``state.db.bak-<time>``)."""
    import glob

    found: list[tuple[float, Path]] = []
    for copy in path.parent.glob(glob.escape(path.name + BACKUP_SUFFIX) + "*"):
        with contextlib.suppress(OSError):
            found.append((copy.stat().st_mtime, copy))
    return [copy for _, copy in sorted(found, reverse=True)]


def _stamp() -> str:
    now = time.time()
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime(now)) + f".{int(now % 1 * 1e6):06d}Z"


def _temp_beside(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}-{threading.get_ident()}.tmp")


def _write_copy(source: sqlite3.Connection, dest: Path, journal: str) -> None:
    """``source``'s database as the new file ``dest`` (0600), checked by sqlite."""
    from skyc.settings.home import PRIVATE_FILE

    os.close(os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE))
    conn = sqlite3.connect(str(dest), isolation_level=None)
    try:
        source.backup(conn)
        conn.execute(f"PRAGMA journal_mode = {journal}")
        check = str(conn.execute("PRAGMA quick_check").fetchone()[0])
    finally:
        conn.close()
    if check != "ok":
        raise StateError(f"the copy of the state database in {dest} fails sqlite's "
                         f"check: {check}")


def _open_copy(source: Path) -> sqlite3.Connection:
    """The copy ``source``, read-only, checked by sqlite."""
    if not source.is_file():
        raise StateError(f"no copy of the state database at {source}",
                         hint="`skyc status` lists the copies skyc kept")
    conn = sqlite3.connect(f"{source.absolute().as_uri()}?mode=ro", uri=True,
                           isolation_level=None)
    try:
        check = str(conn.execute("PRAGMA quick_check").fetchone()[0])
        version = _user_version(conn)
    except sqlite3.Error as exc:
        conn.close()
        raise StateError(f"{source} is not a usable copy of the state database ({exc})"
                         ) from None
    if check != "ok" or version > SCHEMA_VERSION:
        conn.close()
        raise _newer(version) if check == "ok" else StateError(
            f"{source} is damaged too: {check}", hint="restore another copy with --from")
    return conn


def _set_aside(path: Path, kept: Path) -> Path | None:
    """Move the database at ``path`` with its journal files to ``kept``."""
    moved = None
    for suffix in ("", "-wal", "-shm"):
        part = path.with_name(path.name + suffix)
        if part.exists():
            os.replace(part, kept.with_name(kept.name + suffix))
            moved = moved or kept
    return moved


def restore_state(path: Path, source: Path) -> Path | None:
    """Make the copy ``source`` the state database at ``path``. The database it
    replaces, damaged or not, is moved to ``<path>.before-restore-<time>`` (returned;
    None when there was none). No other skyc process should be running."""
    copy = _open_copy(source)
    tmp = _temp_beside(path)
    try:
        _write_copy(copy, tmp, "WAL")
        kept = _set_aside(path, path.with_name(f"{path.name}.before-restore-{_stamp()}"))
        os.replace(tmp, path)
    except OSError as exc:
        raise StateError(f"cannot restore {path}: {exc.filename or path}: "
                         f"{exc.strerror or exc}",
                         hint=f"{path.parent} must be writable, with free space") from None
    except sqlite3.Error as exc:
        raise file_error(tmp, exc) or StateError(f"cannot restore {path}: {exc}") from None
    finally:
        copy.close()
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
    return kept


# -- opening it ---------------------------------------------------------------


def connect(path: Path) -> sqlite3.Connection:
    """Open ``path`` in autocommit mode with WAL and a busy timeout."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = None
    try:
        conn = sqlite3.connect(
            str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
        )
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA foreign_keys = ON")
    except sqlite3.Error as exc:
        if conn is not None:
            conn.close()
        raise file_error(path, exc) or StateError(
            f"cannot open the state database {path}: {exc}", hint=recovery_hint(path)
        ) from None
    conn.row_factory = sqlite3.Row
    return conn


def _prepare_file(path: Path) -> bool:
    """Create the database's directory and its file (0600), or make an existing one
    0600; False when they cannot be written (a read-only SKYC_HOME)."""
    from skyc.settings.home import PRIVATE_FILE, tighten

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Never open (and close) a database that exists: closing any descriptor of a
        # file drops every POSIX lock this process holds on it, sqlite's included, and
        # another process could then remove the journal under live connections.
        if not path.exists():
            with contextlib.suppress(FileExistsError):
                os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, PRIVATE_FILE))
        elif not os.access(path, os.W_OK):
            return False
    except OSError as exc:
        if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
            return False
        raise StateError(f"cannot create the state database {path}: {exc.strerror or exc}",
                         hint=f"{path.parent} must be a directory this user can write, on "
                         "a filesystem with free space") from None
    if not os.access(path.parent, os.W_OK):  # sqlite writes its journal beside the file
        return False
    for suffix in ("", "-wal", "-shm"):
        tighten(path.with_name(path.name + suffix), PRIVATE_FILE)
    return True


def _connect_read_only(path: Path) -> sqlite3.Connection:
    """``path`` opened for reading only. A database whose journal is not beside it
    (cleanly closed) is read as an immutable file: sqlite cannot make its shared-memory
    file in a read-only directory."""
    uri = f"{path.absolute().as_uri()}?mode=ro"
    conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return conn
    except sqlite3.OperationalError as exc:
        conn.close()
        wal = path.with_name(path.name + "-wal")
        if _code(exc) != _CANTOPEN or (wal.exists() and wal.stat().st_size > 0):
            raise
    return sqlite3.connect(f"{uri}&immutable=1", uri=True, isolation_level=None,
                           check_same_thread=False)


def _open_read_only(path: Path) -> sqlite3.Connection:
    """The records of ``path`` (a read-only SKYC_HOME) copied into memory and brought
    up to this skyc's schema there; no records when there is no database."""
    conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    try:
        if path.is_file() and path.stat().st_size > 0:
            source = _connect_read_only(path)
            try:
                source.backup(conn)
            finally:
                source.close()
        migrate(conn)
    except sqlite3.Error as exc:
        conn.close()
        raise file_error(path, exc) or StateError(
            f"cannot read the state database {path}: {exc}", hint=recovery_hint(path)
        ) from None
    except BaseException:
        conn.close()
        raise
    conn.row_factory = sqlite3.Row
    return conn


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
        if not _prepare_file(self.path):
            self.read_only = True
            return _open_read_only(self.path)
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
        version = _user_version(self._conn)
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
                os.replace(latest, latest.with_name(f"{latest.name}-{_stamp()}"))

    def backup(self) -> Path | None:
        """Rewrite :func:`backup_path` with a checked copy of the database; None when
        none could be written (read-only, full, damaged), the database unchanged."""
        if self.read_only:
            return None
        target = backup_path(self.path)
        tmp = _temp_beside(target)
        try:
            with self._lock:
                _write_copy(self._conn, tmp, "DELETE")
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
            _dump(record.placement), record.workspace, record.engine, _dump(record.nodes),
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
        return _cluster(rows[0]) if rows else None

    def list_clusters(self) -> list[ClusterRecord]:
        return [_cluster(r) for r in self._read("SELECT * FROM clusters ORDER BY name")]

    def set_cluster_status(self, name: str, status: ClusterStatus) -> None:
        _check(status, ClusterStatus, "cluster status")
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
        _check(status, JobStatus, "job status")
        with self._write() as conn:
            cur = conn.execute(
                "INSERT INTO jobs (cluster, name, status, submitted_at, started_at, exit_codes,"
                " log_path, job_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (cluster, name, status, now, now if status == "RUNNING" else None,
                 _dump({}), log_path, job_id),
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
            job = _job(rows[0])
            now = time.time()
            changes: dict[str, Any] = {}
            if status is not None:
                _check(status, JobStatus, "job status")
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
                (job.status, job.started_at, job.ended_at, _dump(job.exit_codes),
                 job.log_path, job_id),
            )
        return job

    def get_job(self, job_id: int) -> JobRecord | None:
        rows = self._read("SELECT * FROM jobs WHERE id = ?", (job_id,))
        return _job(rows[0]) if rows else None

    def find_job(self, cluster: str, job_id: int) -> JobRecord | None:
        """The job that cluster ``cluster`` knows as ``job_id``."""
        rows = self._read("SELECT * FROM jobs WHERE cluster = ? AND job_id = ?",
                          (cluster, job_id))
        return _job(rows[0]) if rows else None

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
        return [_job(r) for r in rows]

    # events ----------------------------------------------------------------

    def add_event(
        self, cluster: str, kind: str, message: str, data: dict[str, Any] | None = None
    ) -> int:
        with self._write() as conn:
            cur = conn.execute(
                "INSERT INTO events (cluster, ts, kind, message, data) VALUES (?, ?, ?, ?, ?)",
                (cluster, time.time(), kind, message, None if data is None else _dump(data)),
            )
            return int(cur.lastrowid or 0)

    def events(self, cluster: str) -> list[EventRecord]:
        rows = self._read("SELECT * FROM events WHERE cluster = ? ORDER BY id", (cluster,))
        return [
            EventRecord(
                id=r["id"], cluster=r["cluster"], ts=r["ts"], kind=r["kind"],
                message=r["message"], data=_load(r["data"], f"event {r['id']} data"),
            )
            for r in rows
        ]


def _status_of(conn: sqlite3.Connection, name: str) -> str | None:
    row = conn.execute("SELECT status FROM clusters WHERE name = ?", (name,)).fetchone()
    return None if row is None else str(row[0])


def _cluster(row: sqlite3.Row) -> ClusterRecord:
    where = f"cluster '{row['name']}'"
    return ClusterRecord(
        name=row["name"], status=row["status"], cloud=row["cloud"], region=row["region"],
        zone=row["zone"], placement=_load(row["placement"], f"{where} placement") or {},
        workspace=row["workspace"], engine=row["engine"],
        nodes=_load(row["nodes"], f"{where} nodes") or [], launched_at=row["launched_at"],
        hourly_cost=row["hourly_cost"], last_job=row["last_job"], updated_at=row["updated_at"],
    )


def job_status_from_node(status: str) -> JobStatus | None:
    """A node-side job status (``skyc queue``) as a state database status."""
    table: dict[str, JobStatus] = {
        "PENDING": "PENDING", "SETTING_UP": "SETUP", "SETUP_DONE": "RUNNING",
        "RUNNING": "RUNNING", "SUCCEEDED": "SUCCEEDED", "FAILED": "FAILED",
        "FAILED_SETUP": "FAILED", "CANCELLED": "CANCELLED",
    }
    return table.get(status)


def _job(row: sqlite3.Row) -> JobRecord:
    return JobRecord(
        id=row["id"], job_id=row["job_id"], cluster=row["cluster"], name=row["name"],
        status=row["status"],
        submitted_at=row["submitted_at"], started_at=row["started_at"],
        ended_at=row["ended_at"],
        exit_codes=_load(row["exit_codes"], f"job {row['id']} exit codes") or {},
        log_path=row["log_path"],
    )


__all__ = [
    "CLUSTER_STATUSES",
    "JOB_STATUSES",
    "MIGRATIONS",
    "SCHEMA_VERSION",
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
    "kept_backups",
    "migrate",
    "redact",
    "restore_state",
]
