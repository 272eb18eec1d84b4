"""``skyc state migrate``: a sqlite state copied into a PostgreSQL database, every table
and every column as it is (the ids too, and where each table's next id starts), in one
transaction: the database holds all of it afterwards, or none of it.

A database that already holds records is refused unless the copy is asked to merge:
then this state's clusters must have names the database does not use (a cluster's name
is its key, and its jobs and events go by it), and its rows get ids above the
database's (jobs, events, managed jobs and their attempts and trail move up by one
offset per table, the references between them with them; a cluster's own job ids, the
ones ``queue`` and ``logs`` take, stay).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from skyc.errors import StateError
from skyc.state.dialect import Row
from skyc.state.migrations import TABLES
from skyc.state.pg_store import PostgresStore, PostgresTx, driver_message
from skyc.state.sqlite_store import SqliteStore

# The columns that hold another table's row id (moved with it when merging).
_REFERENCES: dict[str, dict[str, str]] = {
    "clusters": {"last_job": "jobs"},
    "managed_attempts": {"job": "managed_jobs"},
    "managed_events": {"job": "managed_jobs"},
}
_CLUSTER_NAMES = ("SELECT name FROM clusters UNION SELECT cluster FROM jobs"
                  " UNION SELECT cluster FROM events")


@dataclass
class Moved:
    """What a copy wrote: rows per table, and by how much each table's ids moved."""

    counts: dict[str, int] = field(default_factory=dict)
    offsets: dict[str, int] = field(default_factory=dict)


def count_rows(store: SqliteStore | PostgresStore) -> dict[str, int]:
    return {t: int(store.read(f"SELECT COUNT(*) AS n FROM {t}")[0]["n"]) for t in TABLES}


def copy_state(source: SqliteStore, target: PostgresStore, *, merge: bool = False) -> Moved:
    """Copy every record of ``source`` into ``target`` (see the module's docstring)."""
    with source.snapshot():
        held = {t: n for t, n in count_rows(target).items() if n}
        if held and not merge:
            listed = ", ".join(f"{t}: {n}" for t, n in held.items())
            raise StateError(
                f"the state database {target.where} already holds records ({listed})",
                hint="copy into an empty database, or add this state's records to those "
                "with --merge (ids are renumbered above the database's)")
        return _copy_all(source, target, held)


def _copy_all(source: SqliteStore, target: PostgresStore, held: dict[str, int]) -> Moved:
    import psycopg

    moved, table = Moved(), TABLES[0]
    try:
        with target.transaction() as tx:
            assert isinstance(tx, PostgresTx)
            moved.offsets = _offsets(source, tx) if held else {t: 0 for t in TABLES}
            for table in TABLES:
                moved.counts[table] = _copy_table(source, tx, table, moved.offsets)
            _advance(source, tx, moved.offsets)
            _verify(tx, held, moved.counts)
    except psycopg.Error as exc:  # a row PostgreSQL refuses: nothing is written
        raise StateError(
            f"cannot copy table {table} into the state database {target.where}: "
            f"{driver_message(exc, target.url)} (nothing was written)",
            hint="see what is wrong with the sqlite state: SKYC_STATE_URL=sqlite skyc "
            "state check") from None
    return moved


def _offsets(source: SqliteStore, tx: PostgresTx) -> dict[str, int]:
    """How far each table's ids move when merging; refuses clusters both states name."""
    ours = {r["name"] for r in source.read(_CLUSTER_NAMES)}
    theirs = {r["name"] for r in tx.rows(_CLUSTER_NAMES)}
    shared = sorted(ours & theirs)
    if shared:
        raise StateError(
            f"cannot merge: the state database already has clusters named "
            f"{', '.join(shared[:10])}{' ...' if len(shared) > 10 else ''}",
            hint="a cluster's name is its key in a shared state: take those clusters down "
            "(or rename them) in one of the two states first")
    buckets = "SELECT name FROM storage"
    both = sorted({r["name"] for r in source.read(buckets)} & {r["name"] for r in tx.rows(buckets)})
    if both:
        raise StateError(f"cannot merge: both states record the bucket {both[0]}",
                         hint="delete it (`skyc storage delete`) in one of the two first")
    networks = "SELECT name FROM networks"
    both = sorted({r["name"] for r in source.read(networks)}
                  & {r["name"] for r in tx.rows(networks)})
    if both:
        raise StateError(f"cannot merge: both states record the network {both[0]}",
                         hint="take down the clusters that use it in one of the two states "
                         "first (its network goes with the last of them)")
    offsets = {"clusters": 0}
    for table in TABLES[1:]:
        # Above every id the database has used, not only those it still holds.
        [row] = tx.rows(f"SELECT GREATEST((SELECT COALESCE(MAX(id), 0) FROM {table}),"
                        f" (SELECT CASE WHEN is_called THEN last_value ELSE 0 END"
                        f" FROM {_sequence(tx, table)})) AS top")
        offsets[table] = int(row["top"])
    return offsets


def _sequence(tx: PostgresTx, table: str) -> str:
    [row] = tx.rows("SELECT pg_get_serial_sequence(?, 'id') AS seq", (table,))
    return str(row["seq"])


def _moved_rows(batches: Iterator[list[Row]], columns: list[str], table: str,
                offsets: dict[str, int]) -> Iterator[list[Any]]:
    shifts = {c: offsets[t] for c, t in _REFERENCES.get(table, {}).items() if offsets[t]}
    if table != "clusters" and offsets[table]:
        shifts["id"] = offsets[table]
    moves = [(columns.index(c), shift) for c, shift in shifts.items()]
    for batch in batches:
        for row in batch:
            values = [row[c] for c in columns]
            for at, shift in moves:
                if values[at] is not None:
                    values[at] += shift
            yield values


def _copy_table(source: SqliteStore, tx: PostgresTx, table: str,
                offsets: dict[str, int]) -> int:
    columns = [str(r["name"]) for r in source.read(f"PRAGMA table_info({table})")]
    order = "name" if table == "clusters" else "id"
    batches = source.stream(f"SELECT * FROM {table} ORDER BY {order}")
    return tx.copy_rows(table, columns, _moved_rows(batches, columns, table, offsets))


def _advance(source: SqliteStore, tx: PostgresTx, offsets: dict[str, int]) -> None:
    """Each table's next id: after every id sqlite gave out (deleted rows' too)."""
    used = {str(r["name"]): int(r["seq"])
            for r in source.read("SELECT name, seq FROM sqlite_sequence")}
    for table in TABLES[1:]:
        tx.advance_ids(table, used.get(table, 0) + offsets[table])


def _verify(tx: PostgresTx, held: dict[str, int], counts: dict[str, int]) -> None:
    for table in TABLES:
        [row] = tx.rows(f"SELECT COUNT(*) AS n FROM {table}")
        if int(row["n"]) != held.get(table, 0) + counts[table]:
            raise StateError(f"the copy of table {table} does not add up: "
                             f"{row['n']} rows, expected {held.get(table, 0) + counts[table]}"
                             " (nothing was written)")
