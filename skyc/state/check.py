"""``skyc state check``: how sound a state is, sqlite or PostgreSQL: its schema version,
the rows of each table, every record read as skyc reads it (a record that does not parse
is named with what is wrong), the references between tables, and for sqlite the file's
own check (``PRAGMA quick_check``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from skyc.errors import StateError
from skyc.state.database import StateDB
from skyc.state.migrations import SCHEMA_VERSION, TABLES
from skyc.state.records import cluster_from_row, event_from_row, job_from_row

LISTED = 50   # problems named one by one; the rest are counted

# Rows that name a row of another table that is not there (NOT EXISTS: an anti-join on
# both kinds, where PostgreSQL runs NOT IN over a large table row by row).
_DANGLING = (
    ("clusters", "SELECT name AS key, last_job AS ref FROM clusters c WHERE last_job IS NOT"
     " NULL AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = c.last_job)",
     "its last job {ref} is not in jobs"),
    ("managed_attempts", "SELECT id AS key, job AS ref FROM managed_attempts a WHERE NOT"
     " EXISTS (SELECT 1 FROM managed_jobs m WHERE m.id = a.job)",
     "its managed job {ref} is not there"),
    ("managed_events", "SELECT id AS key, job AS ref FROM managed_events e WHERE NOT"
     " EXISTS (SELECT 1 FROM managed_jobs m WHERE m.id = e.job)",
     "its managed job {ref} is not there"),
)


@dataclass
class Problem:
    table: str
    key: str          # the row's name or id
    message: str


@dataclass
class Report:
    where: str
    kind: str
    schema_version: int
    counts: dict[str, int] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    total_problems: int = 0
    storage: str = "ok"   # sqlite's quick_check; "ok" on PostgreSQL

    @property
    def ok(self) -> bool:
        return self.total_problems == 0 and self.storage == "ok"

    def add(self, problem: Problem) -> None:
        self.total_problems += 1
        if len(self.problems) < LISTED:
            self.problems.append(problem)

    def as_dict(self) -> dict[str, Any]:
        return {"state": self.where, "kind": self.kind, "ok": self.ok,
                "schema_version": self.schema_version, "schema_expected": SCHEMA_VERSION,
                "tables": self.counts, "storage": self.storage,
                "problems": [vars(p) for p in self.problems],
                "total_problems": self.total_problems}


def _parsers() -> dict[str, Callable[[Mapping[str, Any]], object]]:
    from skyc.state import managed_jobs, networks, storage

    return {"clusters": cluster_from_row, "jobs": job_from_row, "events": event_from_row,
            "managed_jobs": managed_jobs.job_from_row,
            "managed_attempts": managed_jobs.attempt_from_row,
            "managed_events": managed_jobs.trail_from_row,
            "storage": storage.storage_from_row, "networks": networks.network_from_row}


def _problem(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        return f"{where}: {first['msg']}{more}"
    return str(exc)


def check_state(db: StateDB) -> Report:
    """Read every record of ``db``; what is wrong with it."""
    store = db.store
    report = Report(where=db.where, kind=db.kind, schema_version=store.schema_version())
    if db.kind == "sqlite":
        lines = [str(next(iter(r.values()))) for r in store.read("PRAGMA quick_check")]
        report.storage = "; ".join(lines) or "ok"
    parsers = _parsers()
    for table in TABLES:
        report.counts[table] = 0
        key = "name" if table == "clusters" else "id"
        for batch in store.stream(f"SELECT * FROM {table} ORDER BY {key}"):
            report.counts[table] += len(batch)
            for row in batch:
                try:
                    parsers[table](row)
                except (StateError, ValidationError, KeyError, TypeError) as exc:
                    report.add(Problem(table, str(row.get(key)), _problem(exc)))
    for table, sql, message in _DANGLING:
        for row in store.read(sql):
            report.add(Problem(table, str(row["key"]), message.format(ref=row["ref"])))
    return report
