"""The embedded state: ``$SKYC_HOME/state.db`` (sqlite, stdlib) in WAL mode with a busy
timeout, so several skyc processes can read and write at once; a write transaction is
``BEGIN IMMEDIATE`` (the whole database, one writer at a time).

On a read-only ``SKYC_HOME`` it reads (``read_only``) and refuses every write with a
:class:`~skyc.errors.StateError` naming the file. A failure of the file itself
(damaged, full, locked) is a :class:`~skyc.errors.StateError` that says how to recover
(:func:`~skyc.state.dbfile.file_error`). Before each migration, and whenever the
database asks for it (:meth:`SqliteStore.backup`), a checked copy is kept in
:func:`~skyc.state.dbfile.backup_path`; one kept from before the database was found
empty is renamed ``state.db.bak-<time>``.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from skyc.errors import StateError
from skyc.state.dbfile import (
    backup_path,
    connect,
    file_error,
    open_read_only,
    prepare_file,
    read_only_error,
    recovery_hint,
    stamp,
    temp_beside,
    write_copy,
)
from skyc.state.dialect import SQLITE, Dialect, Row
from skyc.state.migrations import SCHEMA_VERSION, SqliteTx, migrate, user_version


class SqliteStore:
    """The state database in the file ``path``. Safe to use from several threads."""

    dialect: Dialect = SQLITE

    def __init__(self, path: Path) -> None:
        self.path: Path | None = path
        self.file = path
        self.where = str(path)
        self.read_only = False
        self._lock = threading.RLock()
        self._conn = self._open()

    def _open(self) -> sqlite3.Connection:
        if not prepare_file(self.file):
            self.read_only = True
            return open_read_only(self.file)
        self._conn = connect(self.file)
        try:
            self._migrate()
        except sqlite3.Error as exc:
            self._conn.close()
            raise file_error(self.file, exc) or StateError(
                f"state database {self.file} is unreadable: {exc}",
                hint=recovery_hint(self.file)) from None
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
        latest = backup_path(self.file)
        with contextlib.suppress(OSError):
            if latest.exists():
                os.replace(latest, latest.with_name(f"{latest.name}-{stamp()}"))

    def schema_version(self) -> int:
        with self._lock:
            return user_version(self._conn)

    def backup(self) -> Path | None:
        """Rewrite :func:`backup_path` with a checked copy of the database; None when
        none could be written (read-only, full, damaged), the database unchanged."""
        if self.read_only:
            return None
        target = backup_path(self.file)
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

    @contextmanager
    def transaction(self) -> Iterator[SqliteTx]:
        """One write transaction (``BEGIN IMMEDIATE``): all of it, or nothing."""
        if self.read_only:
            raise read_only_error(self.file)
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    yield SqliteTx(self._conn)
                except BaseException:
                    if self._conn.in_transaction:
                        self._conn.execute("ROLLBACK")
                    raise
                self._conn.execute("COMMIT")
            except sqlite3.Error as exc:
                error = file_error(self.file, exc)
                if error is None:
                    raise
                raise error from None

    def read(self, sql: str, args: Sequence[Any] = ()) -> list[Row]:
        with self._lock:
            try:
                return SqliteTx(self._conn).rows(sql, args)
            except sqlite3.Error as exc:
                error = file_error(self.file, exc)
                if error is None:
                    raise
                raise error from None

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Reads in the body see one state of the database (a read transaction)."""
        with self._lock:
            self._conn.execute("BEGIN")
            try:
                yield
            finally:
                self._conn.execute("ROLLBACK")

    def stream(self, sql: str, args: Sequence[Any] = (),
               size: int = 5000) -> Iterator[list[Row]]:
        """The rows of one read, ``size`` at a time (a copy of a large table)."""
        with self._lock:
            cur = self._conn.execute(sql, tuple(args))
            names = [d[0] for d in cur.description or ()]
            while batch := cur.fetchmany(size):
                yield [dict(zip(names, row, strict=True)) for row in batch]
