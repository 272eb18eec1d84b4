"""A team's state in PostgreSQL, through psycopg 3 (imported only here, and only when
the state's URL is a ``postgresql://`` one).

One connection per :class:`PostgresStore`, in autocommit mode: a read is one
statement, a write is one transaction (``conn.transaction()``) whose rows that it reads
and then changes are locked (``SELECT ... FOR UPDATE``, from the dialect). The schema's
version lives in the one-row table ``skyc_schema``; migrations run in one transaction
under a transaction-scoped advisory lock, so two skyc processes opening a new database
at once make its tables once. A connection that the server dropped is made again on the
next use (a read is tried once more on it; a write is not: it was not recorded).

Every failure of the server or the network is a :class:`~skyc.errors.StateError`
naming the database by :func:`~skyc.settings.state_url.redacted_url` (never its password),
with the way out.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skyc.errors import StateError
from skyc.settings.state_url import redacted_url, scrub
from skyc.state.dialect import POSTGRES, Dialect, Row, split_statements
from skyc.state.migrations import MIGRATIONS, SCHEMA_VERSION, newer_schema_error

if TYPE_CHECKING:
    import psycopg

CONNECT_TIMEOUT_S = 10
# pg_advisory_xact_lock(key, 0) while the schema is made or migrated ("skyc" in ASCII).
SCHEMA_LOCK_KEY = 0x736B7963
_VERSION_TABLE = ("CREATE TABLE IF NOT EXISTS skyc_schema (id INTEGER PRIMARY KEY "
                  "CHECK (id = 1), version INTEGER NOT NULL)")


def _params(args: Sequence[Any]) -> tuple[Any, ...]:
    # The schema's flags are integers (as in sqlite); PostgreSQL will not take a boolean.
    return tuple(int(a) if isinstance(a, bool) else a for a in args)


class PostgresTx:
    """:class:`~skyc.state.dialect.Tx` on a psycopg connection."""

    dialect: Dialect = POSTGRES

    def __init__(self, conn: psycopg.Connection[Row]) -> None:
        self.conn = conn

    def execute(self, sql: str, args: Sequence[Any] = ()) -> int:
        return self.conn.execute(POSTGRES.sql(sql), _params(args)).rowcount

    def insert(self, sql: str, args: Sequence[Any] = ()) -> int:
        row = self.conn.execute(POSTGRES.sql(sql) + " RETURNING id", _params(args)).fetchone()
        assert row is not None
        return int(row["id"])

    def rows(self, sql: str, args: Sequence[Any] = ()) -> list[Row]:
        return self.conn.execute(POSTGRES.sql(sql), _params(args)).fetchall()

    def script(self, sql: str) -> None:
        for statement in split_statements(sql):
            self.conn.execute(POSTGRES.ddl(statement))

    def copy_rows(self, table: str, columns: Sequence[str],
                  rows: Iterable[Sequence[Any]]) -> int:
        """Write ``rows`` into ``table`` with ``COPY ... FROM STDIN`` (a large state in
        seconds); how many."""
        from psycopg import sql

        count = 0
        statement = sql.SQL("COPY {} ({}) FROM STDIN").format(
            sql.Identifier(table), sql.SQL(", ").join(map(sql.Identifier, columns)))
        with self.conn.cursor() as cur, cur.copy(statement) as copy:
            for row in rows:
                copy.write_row(_params(row))
                count += 1
        return count

    def advance_ids(self, table: str, at_least: int) -> None:
        """Make ``table``'s next id greater than ``at_least`` and than every id in it."""
        self.execute(
            f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), GREATEST(?,"
            f" (SELECT COALESCE(MAX(id), 0) FROM {table}), 1),"
            f" GREATEST(?, (SELECT COALESCE(MAX(id), 0) FROM {table})) > 0)",
            (at_least, at_least))


def driver_message(exc: Exception, url: str) -> str:
    """The driver's message: its first line, without libpq's prefix or the password."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return scrub(text.removeprefix("connection failed: ").strip(), url)


def connect_error(url: str, exc: Exception) -> StateError:
    """What a failed connection means, naming the database without its password."""
    where, reason = redacted_url(url), driver_message(exc, url)
    low = str(exc).lower()
    if "password" in low or "authentication failed" in low or (
            "role" in low and "does not exist" in low):
        return StateError(
            f"cannot sign in to the state database {where}: {reason}",
            hint="check the user and password: the URL in SKYC_STATE_URL or the config's "
            "state:, PGPASSWORD, or ~/.pgpass")
    if "does not exist" in low:
        return StateError(f"the state database {where} does not exist: {reason}",
                          hint="create it (createdb), or fix the database's name in the URL")
    if "invalid" in low or "missing" in low or "unknown" in low:
        return StateError(f"the state database's URL {where} is not valid: {reason}",
                          hint="the form is postgresql://USER@HOST:PORT/DATABASE")
    return StateError(
        f"cannot reach the state database {where}: {reason}",
        hint="check that the PostgreSQL server runs and that this machine reaches it "
        "(host and port in SKYC_STATE_URL or the config's state:)")


class PostgresStore:
    """The state database ``url`` (``postgresql://...``). Safe to use from several
    threads (one statement at a time)."""

    dialect: Dialect = POSTGRES
    path: Path | None = None
    read_only = False

    def __init__(self, url: str, *, migrate: bool = True) -> None:
        self.url = url
        self.where = redacted_url(url)
        self._lock = threading.RLock()
        self._conn = self._connect()
        if migrate:
            try:
                self._migrate()
            except BaseException:
                self._conn.close()
                raise

    def _connect(self) -> psycopg.Connection[Row]:
        import psycopg
        from psycopg.conninfo import conninfo_to_dict, make_conninfo
        from psycopg.rows import dict_row

        try:
            given = conninfo_to_dict(self.url)
            extra = {k: v for k, v in (("connect_timeout", str(CONNECT_TIMEOUT_S)),
                                       ("application_name", "skyc")) if k not in given}
            return psycopg.connect(make_conninfo(self.url, **extra), autocommit=True,
                                   row_factory=dict_row)
        except psycopg.Error as exc:
            raise connect_error(self.url, exc) from None

    def _live(self) -> psycopg.Connection[Row]:
        if self._conn.closed or self._conn.broken:
            self._conn = self._connect()
        return self._conn

    def _lost(self, exc: Exception, writing: bool = False) -> StateError:
        what = "a write to" if writing else "a read of"
        undone = "; nothing of that write was recorded" if writing else ""
        return StateError(
            f"{what} the state database {self.where} failed: {driver_message(exc, self.url)}"
            f"{undone}",
            hint="run the command again once the database answers")

    # -- the schema -------------------------------------------------------------

    def schema_version(self) -> int:
        rows = self.read("SELECT to_regclass('skyc_schema') IS NOT NULL AS present")
        if not rows[0]["present"]:
            return 0
        rows = self.read("SELECT version FROM skyc_schema WHERE id = 1")
        return int(rows[0]["version"]) if rows else 0

    def _migrate(self) -> None:
        version = self.schema_version()
        if version > SCHEMA_VERSION:
            raise newer_schema_error(version, self.where)
        if version == SCHEMA_VERSION:
            return
        import psycopg

        try:
            with self.transaction() as tx:
                tx.execute("SELECT pg_advisory_xact_lock(?, 0)", (SCHEMA_LOCK_KEY,))
                tx.execute(_VERSION_TABLE)
                tx.execute("INSERT INTO skyc_schema (id, version) VALUES (1, 0)"
                           " ON CONFLICT (id) DO NOTHING")
                [row] = tx.rows("SELECT version FROM skyc_schema WHERE id = 1 FOR UPDATE")
                version = int(row["version"])
                if version > SCHEMA_VERSION:
                    raise newer_schema_error(version, self.where)
                for step in range(version, SCHEMA_VERSION):
                    MIGRATIONS[step](tx)
                tx.execute("UPDATE skyc_schema SET version = ? WHERE id = 1", (SCHEMA_VERSION,))
        except psycopg.Error as exc:
            raise StateError(
                f"cannot make the tables of the state database {self.where} (schema "
                f"version {version} to {SCHEMA_VERSION}): {driver_message(exc, self.url)}",
                hint="give skyc a database of its own, whose user may create tables in it"
            ) from None

    # -- reads and writes -----------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[PostgresTx]:
        """One write transaction: all of it, or nothing."""
        import psycopg

        with self._lock:
            conn = self._live()
            try:
                with conn.transaction():
                    yield PostgresTx(conn)
            except psycopg.OperationalError as exc:
                raise self._lost(exc, writing=True) from None

    def read(self, sql: str, args: Sequence[Any] = ()) -> list[Row]:
        import psycopg

        with self._lock:
            for attempt in (1, 2):
                conn = self._live()
                try:
                    return PostgresTx(conn).rows(sql, args)
                except psycopg.OperationalError as exc:
                    if attempt == 2 or not conn.broken:
                        raise self._lost(exc) from None
        raise AssertionError("unreachable")

    def stream(self, sql: str, args: Sequence[Any] = (),
               size: int = 5000) -> Iterator[list[Row]]:
        """The rows of one read, ``size`` at a time, through a server-side cursor."""
        import psycopg

        with self._lock:
            conn = self._live()
            try:
                with conn.transaction(), conn.cursor(name="skyc_stream") as cur:
                    cur.execute(POSTGRES.sql(sql), _params(args))
                    while batch := cur.fetchmany(size):
                        yield batch
            except psycopg.OperationalError as exc:
                raise self._lost(exc) from None

    def backup(self) -> Path | None:
        """None: a PostgreSQL database is kept by its server's own backups."""
        return None

    def close(self) -> None:
        self._conn.close()
