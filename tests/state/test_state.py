"""The state database: records, jobs, events, migrations, concurrency; each test that
takes ``state`` runs on sqlite and on PostgreSQL (tests/state/conftest.py)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from skyc.errors import StateError
from skyc.state.database import (
    SCHEMA_VERSION,
    ClusterRecord,
    StateDB,
    connect,
    migrate,
)
from tests.state.conftest import StateKind


def _record(name: str = "c1", **kw: object) -> ClusterRecord:
    data: dict[str, object] = {
        "name": name,
        "cloud": "aws",
        "region": "us-east-1",
        "zone": "us-east-1a",
        "placement": {"instance_type": "p4d.24xlarge", "accelerators": {"A100": 8}},
        "workspace": f"/tmp/clusters/{name}",
        "engine": "terraform",
        "nodes": [{"name": "head", "rank": 0, "ip": "10.0.0.1"}],
        "launched_at": 1000.0,
        "hourly_cost": 32.77,
    }
    data.update(kw)
    return ClusterRecord.model_validate(data)


def test_default_path_is_under_skyc_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKYC_HOME", str(tmp_path))
    with StateDB() as db:
        assert db.path == tmp_path / "state.db"
    assert (tmp_path / "state.db").exists()


def test_cluster_roundtrip_and_update(state: StateKind) -> None:
    with state.open() as db:
        assert db.get_cluster("c1") is None
        db.upsert_cluster(_record())
        got = db.get_cluster("c1")
        assert got is not None
        assert got.model_dump(exclude={"updated_at", "owner"}) == _record().model_dump(
            exclude={"updated_at", "owner"}
        )
        assert got.updated_at is not None and got.owner == db.caller()  # set when recorded
        db.upsert_cluster(_record(status="UP", hourly_cost=1.5))
        db.upsert_cluster(_record("a0"))
        db.upsert_cluster(_record("B2"))
        # the same order on both kinds (bytewise, as sqlite sorts)
        assert [c.name for c in db.list_clusters()] == ["B2", "a0", "c1"]
        again = db.get_cluster("c1")
        assert again is not None and again.status == "UP" and again.hourly_cost == 1.5
        db.set_cluster_status("c1", "STOPPED")
        stopped = db.get_cluster("c1")
        assert stopped is not None and stopped.status == "STOPPED"


def test_status_errors(state: StateKind) -> None:
    with state.open() as db:
        with pytest.raises(StateError, match="no cluster named 'nope'"):
            db.set_cluster_status("nope", "UP")
        db.upsert_cluster(_record())
        with pytest.raises(StateError, match="invalid cluster status 'RUNNING'"):
            db.set_cluster_status("c1", "RUNNING")  # type: ignore[arg-type]


def test_jobs_and_last_job(state: StateKind) -> None:
    with state.open() as db:
        db.upsert_cluster(_record())
        j1 = db.add_job("c1", "train", log_path="/logs/1.log")
        j2 = db.add_job("c1", "eval")
        cluster = db.get_cluster("c1")
        assert cluster is not None and cluster.last_job == j2
        running = db.update_job(j1, status="RUNNING")
        assert running.started_at is not None and running.ended_at is None
        done = db.update_job(j1, status="FAILED", exit_codes={"head": 0, "worker1": 3})
        assert done.ended_at is not None and done.started_at == running.started_at
        jobs = db.list_jobs("c1")
        assert [(j.id, j.name, j.status) for j in jobs] == [
            (j1, "train", "FAILED"), (j2, "eval", "PENDING"),
        ]
        assert jobs[0].exit_codes == {"head": 0, "worker1": 3}
        assert jobs[0].log_path == "/logs/1.log"
        # re-upserting the cluster (e.g. after a failover) keeps its last job
        db.upsert_cluster(_record(status="UP"))
        kept = db.get_cluster("c1")
        assert kept is not None and kept.last_job == j2
        with pytest.raises(StateError, match="no job with id 999"):
            db.update_job(999, status="RUNNING")
        with pytest.raises(StateError, match="invalid job status"):
            db.update_job(j2, status="DONE")  # type: ignore[arg-type]


def test_events_keep_order_and_data_and_redact_secrets(state: StateKind) -> None:
    with state.open() as db:
        db.add_event("c1", "attempt", "aws/us-east-1/us-east-1a", {"zone": "us-east-1a"})
        db.add_event(
            "c1", "failover", "InsufficientInstanceCapacity: blocked zone",
            {"code": "InsufficientInstanceCapacity", "aws_secret_access_key": "abc",
             "nested": [{"password": "pw", "ok": 1}]},
        )
        db.add_event("c2", "apply", "other cluster")
        events = db.events("c1")
        assert [e.kind for e in events] == ["attempt", "failover"]
        assert events[0].ts <= events[1].ts
        assert events[1].data == {
            "code": "InsufficientInstanceCapacity", "aws_secret_access_key": "<redacted>",
            "nested": [{"password": "<redacted>", "ok": 1}],
        }
    raw = state.dump()
    assert "abc" not in raw and "'pw'" not in raw and '"pw"' not in raw
    assert "<redacted>" in raw
    if state.path is not None:
        raw_file = state.path.read_bytes()
        assert b"abc" not in raw_file and b'"pw"' not in raw_file


def test_payloads_are_versioned_json(state: StateKind) -> None:
    with state.open() as db:
        db.upsert_cluster(_record())
    [(placement, nodes)] = state.raw("SELECT placement, nodes FROM clusters")
    assert json.loads(placement) == {
        "v": 1, "data": {"accelerators": {"A100": 8}, "instance_type": "p4d.24xlarge"},
    }
    assert json.loads(nodes)["v"] == 1
    # a payload from a future skyc is refused with a clear error, not misread
    state.raw("UPDATE clusters SET nodes = ?", (json.dumps({"v": 99, "data": []}),))
    with state.open() as db, pytest.raises(StateError, match="payload version 99"):
        db.get_cluster("c1")


def test_a_failed_write_leaves_nothing_behind(state: StateKind) -> None:
    with state.open() as db:
        db.upsert_cluster(_record())
        with pytest.raises(RuntimeError), db.transaction() as tx:
            tx.insert("INSERT INTO events (cluster, ts, kind, message) VALUES (?, ?, ?, ?)",
                      ("c1", 1.0, "apply", "half"))
            tx.execute("UPDATE clusters SET status = 'UP' WHERE name = 'c1'")
            raise RuntimeError("interrupted between two writes")
        assert db.events("c1") == []
        got = db.get_cluster("c1")
        assert got is not None and got.status == "INIT"
        db.add_event("c1", "apply", "whole")   # the connection is still good
        assert [e.message for e in db.events("c1")] == ["whole"]


def test_remove_cluster_forgets_jobs_and_events(state: StateKind) -> None:
    with state.open() as db:
        db.upsert_cluster(_record())
        db.add_job("c1", "train")
        db.add_event("c1", "apply", "applied")
        assert db.remove_cluster("c1") is True
        assert db.get_cluster("c1") is None
        assert db.list_jobs("c1") == [] and db.events("c1") == []
        assert db.remove_cluster("c1") is False


def test_old_schema_is_migrated(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = connect(path)
    assert migrate(conn, upto=1) == 1
    conn.execute(
        "INSERT INTO clusters (name, status, cloud, placement, nodes, hourly_cost, updated_at)"
        " VALUES ('old', 'UP', 'aws', ?, ?, 2.0, 1.0)",
        (json.dumps({"v": 1, "data": {}}), json.dumps({"v": 1, "data": []})),
    )
    conn.execute(
        "INSERT INTO jobs (cluster, name, status, submitted_at, exit_codes)"
        " VALUES ('old', 'j', 'SUCCEEDED', 1.0, ?)",
        (json.dumps({"v": 1, "data": {"head": 0}}),),
    )
    conn.close()
    with StateDB(path) as db:
        old = db.get_cluster("old")
        assert old is not None and old.status == "UP"
        assert old.last_job == 1  # filled in by the migration from the jobs table
        assert db.list_jobs("old")[0].exit_codes == {"head": 0}
    check = sqlite3.connect(path)
    assert check.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 8
    indexes = {r[0] for r in check.execute("SELECT name FROM sqlite_master WHERE type='index'")}
    assert {"jobs_by_cluster", "events_by_cluster"} <= indexes
    assert check.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    check.close()


def test_old_postgres_schema_is_migrated(postgres_url: str) -> None:
    """The same migrations bring a PostgreSQL database up from version 1."""
    import psycopg

    from skyc.state.migrations import MIGRATIONS
    from skyc.state.pg_store import PostgresTx

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        with conn.transaction():
            MIGRATIONS[0](PostgresTx(conn))  # type: ignore[arg-type]
            conn.execute("CREATE TABLE skyc_schema (id INTEGER PRIMARY KEY, version INTEGER)")
            conn.execute("INSERT INTO skyc_schema VALUES (1, 1)")
        conn.execute(
            "INSERT INTO clusters (name, status, cloud, placement, nodes, hourly_cost,"
            " updated_at) VALUES ('old', 'UP', 'aws', %s, %s, 2.0, 1.0)",
            (json.dumps({"v": 1, "data": {}}), json.dumps({"v": 1, "data": []})))
        conn.execute("INSERT INTO jobs (cluster, name, status, submitted_at, exit_codes)"
                     " VALUES ('old', 'j', 'SUCCEEDED', 1.0, %s)",
                     (json.dumps({"v": 1, "data": {"head": 0}}),))
    with StateDB(url=postgres_url) as db:
        old = db.get_cluster("old")
        assert old is not None and old.last_job == 1  # filled in by migration 2
        assert db.store.schema_version() == SCHEMA_VERSION
        assert db.add_job("old", "next") == 2
    with psycopg.connect(postgres_url) as conn:
        indexes = {r[0] for r in conn.execute("SELECT indexname FROM pg_indexes")}
    assert {"jobs_by_cluster", "events_by_cluster", "managed_events_by_job"} <= indexes


def test_newer_schema_is_refused(state: StateKind) -> None:
    state.open().close()
    if state.path is not None:
        state.raw("PRAGMA user_version = 42")
    else:
        state.raw("UPDATE skyc_schema SET version = 42")
    with pytest.raises(StateError, match="schema version 42 is newer") as info:
        state.open()
    assert "upgrade skyc" in (info.value.hint or "")
    if state.url:
        assert "pg-test-Secret" not in str(info.value) and "skyc:***@" in str(info.value)


def test_garbage_file_is_a_state_error(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StateError):
        StateDB(path)


_WRITER = """
import sys
from pathlib import Path
from skyc.state.database import StateDB
where = sys.argv[1]
db = StateDB(url=where) if "://" in where else StateDB(Path(where))
for i in range(50):
    db.add_event("c1", "attempt", f"{sys.argv[2]}-{i}")
    db.add_job("c1", f"{sys.argv[2]}-{i}")
db.close()
"""


def test_concurrent_processes_lose_no_writes(state: StateKind) -> None:
    where = state.url or str(state.path)
    env = dict(os.environ)
    procs = [
        subprocess.Popen([sys.executable, "-c", _WRITER, where, f"w{n}"], env=env,
                         cwd=Path(__file__).parents[2])
        for n in range(4)
    ]
    for proc in procs:
        assert proc.wait(timeout=120) == 0
    with state.open() as db:
        messages = {e.message for e in db.events("c1")}
        assert len(messages) == 200
        jobs = db.list_jobs("c1")
        assert len(jobs) == 200 and len({j.id for j in jobs}) == 200


def test_placement_and_up_helpers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                  state: StateKind) -> None:
    """``StateDB()`` opens the state SKYC_STATE_URL names (the file in SKYC_HOME without)."""
    from skyc.model.nodes import ClusterInfo, Node
    from skyc.model.plan import Placement

    monkeypatch.setenv("SKYC_HOME", str(tmp_path))
    if state.url:
        monkeypatch.setenv("SKYC_STATE_URL", state.url)
    first = Placement(cloud="aws", region="us-east-1", zone="us-east-1a",
                      instance_type="g5.xlarge", accelerators={"A10G": 1}, hourly_cost=1.0)
    second = first.model_copy(update={"zone": "us-east-1b", "hourly_cost": 1.1})
    with StateDB() as db:
        rec = db.upsert_cluster_from_placement("gpu", first, engine="terraform")
        assert rec.status == "INIT" and rec.zone == "us-east-1a"
        assert rec.workspace == str(tmp_path / "clusters" / "gpu")
        info = ClusterInfo(
            name="gpu", cloud="aws", region="us-east-1", zone="us-east-1b",
            workspace=str(tmp_path / "clusters" / "gpu"),
            nodes=[Node(name="head", rank=0, transport="ssh", ip="10.0.0.5", host="3.3.3.3",
                        user="ubuntu")],
        )
        db.upsert_cluster_from_placement("gpu", second)  # failover re-targets the cluster
        up = db.mark_cluster_up("gpu", info, second)
        assert up.status == "UP" and up.zone == "us-east-1b" and up.hourly_cost == 1.1
        assert up.engine == "terraform" and up.launched_at is not None
        assert up.nodes == [{"name": "head", "rank": 0, "transport": "ssh", "ip": "10.0.0.5",
                             "host": "3.3.3.3", "port": 22, "user": "ubuntu"}]
        stored = db.get_cluster("gpu")
        assert stored is not None and stored.placement["zone"] == "us-east-1b"
        # a relaunch on the same placement keeps nodes and launch time
        again = db.upsert_cluster_from_placement("gpu", second, status="INIT")
        assert again.nodes == up.nodes and again.launched_at == up.launched_at
        assert db.mark_cluster_up("gpu", info, second).launched_at == up.launched_at
        # a different placement drops the stale nodes
        assert db.upsert_cluster_from_placement("gpu", first).nodes == []
    assert (tmp_path / "state.db").exists() == (state.kind == "sqlite")
