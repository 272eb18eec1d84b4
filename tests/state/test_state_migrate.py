"""``skyc state migrate``: a populated sqlite state copied into a real PostgreSQL database
row for row (ids, and where each table's next id starts), after which ``status``,
``queue`` and ``jobs queue`` answer the same; a database that holds records is refused,
or merged into with --merge."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from skyc.errors import StateError
from skyc.state.database import StateDB
from skyc.state.managed_jobs import ManagedJobStore
from skyc.state.migrations import TABLES
from skyc.state.pg_store import PostgresStore
from skyc.state.sqlite_store import SqliteStore
from skyc.state.transfer import copy_state, count_rows
from tests.state.team import ok, populate, skyc
from tests.support.postgres import PASSWORD


def _answers(home: Path, url: str | None = None) -> dict[str, Any]:
    status = json.loads(ok(home, "status", "--format", "json", url=url))
    for row in status["clusters"]:
        row.pop("age_s")  # the one field that moves with the clock
    return {"status": status,
            "queue": json.loads(ok(home, "queue", "--format", "json", url=url)),
            "jobs": json.loads(ok(home, "jobs", "queue", "--format", "json", url=url))}


def _rows(store: SqliteStore | PostgresStore) -> dict[str, list[dict[str, Any]]]:
    return {t: store.read(f"SELECT * FROM {t} ORDER BY {'name' if t == 'clusters' else 'id'}")
            for t in TABLES}


def test_migrate_copies_every_table_and_the_answers_stay(tmp_path: Path,
                                                         postgres_url: str) -> None:
    home = tmp_path / "home"
    populate(home)
    before = _answers(home)
    assert len(before["queue"]["jobs"]) == 2 and len(before["jobs"]["jobs"]) == 2
    assert {c["name"] for c in before["status"]["clusters"]} == {"c1", "train"}

    out = ok(home, "state", "migrate", "--to", postgres_url)
    assert "clusters                  2" in out and "managed_attempts          2" in out
    assert PASSWORD not in out and "skyc:***@127.0.0.1" in out

    source, target = SqliteStore(home / "state.db"), PostgresStore(postgres_url)
    try:
        copied = _rows(target)
        assert copied == _rows(source)   # every column of every row, ids included
        assert all(copied[t] for t in TABLES)
    finally:
        source.close()
        target.close()
    assert _answers(home, postgres_url) == before

    with StateDB(url=postgres_url) as db:   # ids go on after the last sqlite gave out
        top = max(j.id for c in ("c1", "train") for j in db.list_jobs(c))
        assert db.add_job("train", "next") == top + 2   # one was given out, then deleted
    ok(home, "exec", "c1", "echo three", url=postgres_url)
    assert [j["id"] for j in json.loads(ok(home, "queue", "c1", "--format", "json",
                                           url=postgres_url))["jobs"]] == [1, 2, 3]


def test_a_database_with_records_is_refused_then_merged(tmp_path: Path,
                                                        postgres_url: str) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    populate(first)
    populate(second, local="c2", cloud="train2", region="us-west-2")
    ok(first, "state", "migrate", "--to", postgres_url)

    again = skyc(first, "state", "migrate", "--to", postgres_url)
    assert again.returncode == 1 and "Traceback" not in again.stderr
    assert "already holds records (clusters: 2, jobs: 3," in again.stderr
    assert "--merge" in again.stderr and PASSWORD not in again.stderr
    clash = skyc(first, "state", "migrate", "--to", postgres_url, "--merge")
    assert clash.returncode == 1 and "already has clusters named c1, train" in clash.stderr

    out = ok(second, "state", "migrate", "--to", postgres_url, "--merge")
    assert "ids moved up (merged): jobs +4, events +6, managed_jobs +2" in out
    with StateDB(url=postgres_url) as db:
        assert [c.name for c in db.list_clusters()] == ["c1", "c2", "train", "train2"]
        moved = db.get_cluster("train2")
        assert moved is not None and moved.last_job is not None
        last = db.get_job(moved.last_job)   # the reference moved with the row
        assert last is not None and (last.cluster, last.name) == ("train2", "pretrain")
        store = ManagedJobStore(db)
        jobs = store.all_jobs()
        assert [(j.id, j.name) for j in jobs] == [(1, "mj1"), (2, "mj2"), (3, "mj1"),
                                                  (4, "mj2")]
        assert [a.cluster for a in store.attempts(3)] == ["skyc-job-1"]
        assert [e.status for e in store.trail(4)] == ["PENDING", "RUNNING", "FAILED"]
    check = json.loads(ok(first, "state", "check", "--format", "json", url=postgres_url))
    assert check["ok"] and check["tables"]["jobs"] == 6 and check["tables"]["clusters"] == 4


def test_a_row_postgresql_refuses_writes_nothing(tmp_path: Path, postgres_url: str) -> None:
    """An attempt whose managed job is gone (sqlite kept no foreign keys once): the copy
    is refused naming the table, and the database is left empty."""
    path = tmp_path / "state.db"
    with StateDB(path) as db:
        db.add_event("c1", "apply", "applied")
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO managed_attempts (job, task_index, cluster, started_at)"
                 " VALUES (42, 0, 'skyc-job-42', 1.0)")
    conn.commit()
    conn.close()
    source, target = SqliteStore(path), PostgresStore(postgres_url)
    try:
        with pytest.raises(StateError, match="cannot copy table managed_attempts") as info:
            copy_state(source, target)
        assert "nothing was written" in str(info.value) and PASSWORD not in str(info.value)
        assert set(count_rows(target).values()) == {0}
    finally:
        source.close()
        target.close()
