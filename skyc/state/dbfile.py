"""The state database's file: opening it (0600, WAL, a busy timeout; read-only where
``SKYC_HOME`` is), what a damaged, full, locked or read-only file means for the user
(:func:`file_error`), and the checked copies skyc keeps of it (:func:`backup_path`,
:func:`restore_state`)."""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import threading
import time
from pathlib import Path

from skyc.errors import StateError
from skyc.state.migrations import (
    SCHEMA_VERSION,
    migrate,
    newer_schema_error,
    user_version,
)

BUSY_TIMEOUT_S = 30.0

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


def stamp() -> str:
    now = time.time()
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime(now)) + f".{int(now % 1 * 1e6):06d}Z"


def temp_beside(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}-{threading.get_ident()}.tmp")


def write_copy(source: sqlite3.Connection, dest: Path, journal: str) -> None:
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
        version = user_version(conn)
    except sqlite3.Error as exc:
        conn.close()
        raise StateError(f"{source} is not a usable copy of the state database ({exc})"
                         ) from None
    if check != "ok" or version > SCHEMA_VERSION:
        conn.close()
        raise newer_schema_error(version) if check == "ok" else StateError(
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
    tmp = temp_beside(path)
    try:
        write_copy(copy, tmp, "WAL")
        kept = _set_aside(path, path.with_name(f"{path.name}.before-restore-{stamp()}"))
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


def prepare_file(path: Path) -> bool:
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


def open_read_only(path: Path) -> sqlite3.Connection:
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
