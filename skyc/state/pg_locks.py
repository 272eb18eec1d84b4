"""Cluster locks in a team's PostgreSQL state (:mod:`skyc.state.locks` uses them when
the state's URL is a ``postgresql://`` one): the same locks as ``fcntl.flock`` gives on
one machine, for every machine that shares the database.

A lock is a session-level advisory lock on a 64-bit key derived from the cluster's name
(:func:`lock_key`), exclusive (apply, destroy) or shared (jobs starting), taken with
``pg_try_advisory_lock[_shared]`` in a poll loop (so that ``--lock-timeout`` and the
waiting message work as with a file) on a connection of its own that stays open for the
lock's life: when the holder exits, crashes or loses its machine, the server closes
that connection and the lock goes with it (TCP keepalives on the connection make a
vanished machine count as gone within about a minute and a half).

Who holds a lock is a row of ``skyc_lock_holders`` (made here, on first use, not by a
migration: the rows live only as long as their locks), written in the same statement
that takes the lock and removed in the one that releases it: the owner (the config's
``user:``, else user@host), the host, the pid, the command (without option values) and
since when (the server's clock). A row whose server process no longer holds the lock
(``pg_locks``) belongs to a holder that died: it is never shown, and a waiter deletes it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from skyc.errors import LockTimeout, StateError
from skyc.settings.state_url import redacted_url
from skyc.state.dialect import Row
from skyc.state.pg_store import CONNECT_TIMEOUT_S, SCHEMA_LOCK_KEY, connect_error, driver_message

if TYPE_CHECKING:
    import psycopg

TABLE = "skyc_lock_holders"
POLL_S = 0.1
# The server drops a connection whose peer stopped answering after 30 + 6 * 10 s.
_KEEPALIVES = ("-c tcp_keepalives_idle=30 -c tcp_keepalives_interval=10 "
               "-c tcp_keepalives_count=6")
_KEY_PREFIX = b"skyc cluster lock\x00"

_TABLE_SQL = f"""CREATE TABLE IF NOT EXISTS {TABLE} (
    name TEXT NOT NULL, mode TEXT NOT NULL, who TEXT NOT NULL, host TEXT NOT NULL,
    pid INTEGER NOT NULL, command TEXT NOT NULL, since DOUBLE PRECISION NOT NULL,
    backend_pid INTEGER NOT NULL, PRIMARY KEY (name, backend_pid))"""

# Takes the lock and, when it got it, records the holder: one statement, so a holder
# is never without its row nor a row without its lock.
_TAKE = f"""WITH got AS (SELECT {{function}}(%(key)s) AS ok),
kept AS (
    INSERT INTO {TABLE} (name, mode, who, host, pid, command, since, backend_pid)
    SELECT %(name)s, %(mode)s, %(who)s, %(host)s, %(pid)s, %(command)s,
           EXTRACT(EPOCH FROM clock_timestamp())::double precision, pg_backend_pid()
    FROM got WHERE got.ok
    ON CONFLICT (name, backend_pid) DO UPDATE SET mode = excluded.mode,
        who = excluded.who, host = excluded.host, pid = excluded.pid,
        command = excluded.command, since = excluded.since)
SELECT ok FROM got"""

# The server processes that hold the advisory lock on a key in this database (a bigint
# key shows as its high half in classid, its low half in objid, objsubid 1).
_HOLDING = """SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted
    AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
    AND classid::bigint = %(high)s AND objid::bigint = %(low)s AND objsubid = 1"""

_HOLDERS = f"""WITH live AS ({_HOLDING}),
stale AS (
    DELETE FROM {TABLE} h WHERE h.name = %(name)s
    AND NOT EXISTS (SELECT 1 FROM live WHERE live.pid = h.backend_pid))
SELECT name, mode, who, host, pid, command, since FROM {TABLE} h
WHERE h.name = %(name)s AND EXISTS (SELECT 1 FROM live WHERE live.pid = h.backend_pid)
ORDER BY mode = 'exclusive' DESC, since"""

# Releases the lock, removing its row and those of the lock's holders that died.
_RELEASE = f"""WITH live AS ({_HOLDING}),
gone AS (
    DELETE FROM {TABLE} h WHERE h.name = %(name)s AND (h.backend_pid = pg_backend_pid()
    OR NOT EXISTS (SELECT 1 FROM live WHERE live.pid = h.backend_pid)))
SELECT {{function}}(%(key)s) AS released"""

_HELD = f"SELECT EXISTS ({_HOLDING} AND mode = 'ExclusiveLock') AS held"


def lock_key(name: str) -> int:
    """The advisory lock key of cluster ``name``: a signed 64-bit hash of it, the same
    on every machine and in every skyc version."""
    digest = hashlib.sha256(_KEY_PREFIX + name.encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def _key_args(name: str) -> dict[str, Any]:
    unsigned = lock_key(name) & 0xFFFF_FFFF_FFFF_FFFF
    return {"name": name, "key": lock_key(name), "high": unsigned >> 32,
            "low": unsigned & 0xFFFF_FFFF}


def connect(url: str) -> psycopg.Connection[Row]:
    """A new autocommit connection to ``url`` whose server side notices a vanished
    peer (keepalives); a :class:`StateError` naming the URL without its password."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo
    from psycopg.rows import dict_row

    try:
        given = conninfo_to_dict(url)
        extra = {k: v for k, v in (("connect_timeout", str(CONNECT_TIMEOUT_S)),
                                   ("application_name", "skyc lock")) if k not in given}
        extra["options"] = " ".join(filter(None, (str(given.get("options") or ""),
                                                  _KEEPALIVES)))
        return psycopg.connect(make_conninfo(url, **extra), autocommit=True,
                               row_factory=dict_row)
    except psycopg.Error as exc:
        raise connect_error(url, exc) from None


def _failed(url: str, name: str, exc: Exception) -> StateError:
    return StateError(
        f"the lock on cluster '{name}' in the state database {redacted_url(url)} failed: "
        f"{driver_message(exc, url)}",
        hint="run the command again once the database answers")


def _make_table(conn: psycopg.Connection[Row], url: str) -> None:
    import psycopg

    try:
        with conn.transaction():
            # Two processes making it at once would collide in the catalog.
            conn.execute("SELECT pg_advisory_xact_lock(%s, 1)", (SCHEMA_LOCK_KEY,))
            conn.execute(_TABLE_SQL)
    except psycopg.Error as exc:
        raise StateError(
            f"cannot make the table {TABLE} of the state database {redacted_url(url)}: "
            f"{driver_message(exc, url)}",
            hint="give skyc a database of its own, whose user may create tables in it"
        ) from None


def _holders(conn: psycopg.Connection[Row], url: str, name: str) -> list[Row]:
    """The live holders of cluster ``name``'s lock, exclusive first, then oldest first;
    the rows of dead holders are deleted."""
    import psycopg

    try:
        return conn.execute(_HOLDERS, _key_args(name)).fetchall()
    except psycopg.errors.UndefinedTable:
        return []
    except psycopg.Error as exc:
        raise _failed(url, name, exc) from None


def describe(holders: list[Row]) -> str:
    """``alice@host (skyc apply t.yaml, pid 42, since 12:01:03)``, and how many more."""
    if not holders:
        return "another skyc process"
    first = holders[0]
    who = str(first["who"])
    if "@" not in who:
        who = f"{who}@{first['host']}"
    since = time.strftime("%H:%M:%S", time.localtime(float(first["since"])))
    mode = ", shared" if first["mode"] == "shared" else ""
    text = f"{who} ({first['command']}, pid {first['pid']}, since {since}{mode})"
    more = len(holders) - 1
    if more:
        text += f" and {more} other{'s' if more > 1 else ''}"
    return text


def holder_record(row: Row) -> dict[str, Any]:
    """A holder's row as :func:`skyc.state.locks.read_holder` gives it."""
    return {"pid": int(row["pid"]), "command": str(row["command"]),
            "since": float(row["since"]), "who": str(row["who"]), "host": str(row["host"]),
            "mode": str(row["mode"])}


def _owner() -> str:
    """The config's ``user:``, else user@host (a config that does not load says so
    elsewhere; the lock only names its holder)."""
    from skyc.errors import SkycError
    from skyc.model.owner import default_owner
    from skyc.state.database import caller

    try:
        return caller()
    except SkycError:
        return default_owner()


class PgLock:
    """Cluster ``name``'s lock on a connection of its own to ``url`` (one this process
    left idle after an earlier lock, else a new one)."""

    def __init__(self, url: str, name: str, *, shared: bool, command: str) -> None:
        self.url, self.name, self.shared = url, name, shared
        self.held = False
        self._record = {**_key_args(name), "mode": "shared" if shared else "exclusive",
                        "who": _owner(), "host": socket.gethostname(), "pid": os.getpid(),
                        "command": command}
        self.conn = _idle_connection(url) or connect(url)

    def try_take(self) -> bool:
        """Take the lock if it is free (for this mode); whether it was. A connection
        found dropped is made again first (it held nothing)."""
        import psycopg

        function = "pg_try_advisory_lock_shared" if self.shared else "pg_try_advisory_lock"
        sql = _TAKE.format(function=function)
        for attempt in (1, 2):
            try:
                row = self.conn.execute(sql, self._record).fetchone()
                self.held = bool(row and row["ok"])
                return self.held
            except psycopg.errors.UndefinedTable as exc:
                if attempt == 2:
                    raise _failed(self.url, self.name, exc) from None
                _make_table(self.conn, self.url)
            except psycopg.OperationalError as exc:
                if attempt == 2 or not self.conn.broken:
                    raise _failed(self.url, self.name, exc) from None
                self.conn.close()
                self.conn = connect(self.url)
            except psycopg.Error as exc:
                raise _failed(self.url, self.name, exc) from None
        raise AssertionError("unreachable")

    def holders(self) -> list[Row]:
        return _holders(self.conn, self.url, self.name)

    def take(self, timeout: float, on_wait: Callable[[str], None] | None) -> None:
        """Take the lock, waiting up to ``timeout`` seconds (``on_wait`` told once who
        holds it); :class:`LockTimeout` naming the holder after."""
        if self.try_take():
            return
        holder = describe(self.holders())
        if on_wait is not None:
            on_wait(f"cluster '{self.name}' is locked by {holder}; waiting up to "
                    f"{timeout:g}s")
        deadline = time.monotonic() + timeout
        while not self.try_take():
            if time.monotonic() >= deadline:
                latest = self.holders()
                if latest:
                    holder = describe(latest)
                raise LockTimeout(
                    f"cluster '{self.name}' is busy: {holder} holds its lock (in the state "
                    f"database {redacted_url(self.url)}); gave up after {timeout:g}s",
                    hint="wait for that command to finish, then try again")
            time.sleep(POLL_S)

    def close(self) -> None:
        """Release the lock (its row with it). The connection, which then holds no lock,
        is kept for this process's next lock on ``url``, or closed: a connection the
        server dropped has lost the lock already."""
        import psycopg
        from psycopg.pq import TransactionStatus

        reusable = False
        try:
            if self.held and not self.conn.broken:
                function = ("pg_advisory_unlock_shared" if self.shared
                            else "pg_advisory_unlock")
                row = self.conn.execute(_RELEASE.format(function=function),
                                        self._record).fetchone()
                self.held = not (row and row["released"])
            reusable = not self.held and not self.conn.closed and (
                self.conn.info.transaction_status == TransactionStatus.IDLE)
        except psycopg.Error:
            pass  # the server ends the session below, and the lock with it
        finally:
            self.held = False
            if not (reusable and _keep_idle(self.url, self.conn)):
                self.conn.close()


@contextlib.contextmanager
def pg_cluster_lock(url: str, name: str, *, timeout: float,
                    on_wait: Callable[[str], None] | None, shared: bool,
                    command: str) -> Iterator[PgLock]:
    """Hold cluster ``name``'s lock in the database ``url`` for the ``with`` body."""
    lock = PgLock(url, name, shared=shared, command=command)
    try:
        lock.take(timeout, on_wait)
        yield lock
    finally:
        lock.close()


# At most one connection per database that holds no lock, kept for the next one (a
# status that looks at each cluster in turn takes and releases many).
_idle: dict[str, psycopg.Connection[Row]] = {}
_idle_lock = threading.Lock()


def _idle_connection(url: str) -> psycopg.Connection[Row] | None:
    with _idle_lock:
        conn = _idle.pop(url, None)
    return conn if conn is not None and not conn.closed else None


def _keep_idle(url: str, conn: psycopg.Connection[Row]) -> bool:
    """Keep ``conn`` for the next lock on ``url``; False when one is kept already."""
    with _idle_lock:
        if url in _idle:
            return False
        _idle[url] = conn
        return True

# One connection per process and database for the questions about locks that do not
# take one (who holds it, whether it is held): asked per workspace, say, by status.
_readers: dict[str, psycopg.Connection[Row]] = {}
_readers_lock = threading.Lock()


def _ask(url: str, name: str, sql: str) -> list[Row]:
    import psycopg

    with _readers_lock:
        for attempt in (1, 2):
            conn = _readers.get(url)
            if conn is None or conn.closed or conn.broken:
                conn = _readers[url] = connect(url)
            try:
                return conn.execute(sql, _key_args(name)).fetchall()
            except psycopg.errors.UndefinedTable:
                return []
            except psycopg.OperationalError as exc:
                if attempt == 2 or not conn.broken:
                    raise _failed(url, name, exc) from None
            except psycopg.Error as exc:
                raise _failed(url, name, exc) from None
    raise AssertionError("unreachable")


def read_holders(url: str, name: str) -> list[Row]:
    """The live holders of cluster ``name``'s lock in the database ``url`` (exclusive
    first, then oldest first)."""
    return _ask(url, name, _HOLDERS)


def lock_held(url: str, name: str) -> bool:
    """Whether a process holds cluster ``name``'s lock exclusively in ``url`` now."""
    rows = _ask(url, name, _HELD)
    return bool(rows and rows[0]["held"])


__all__ = ["PgLock", "describe", "holder_record", "lock_held", "lock_key",
           "pg_cluster_lock", "read_holders"]
