"""``skyc state check`` on both kinds of state: a sound one passes with its schema
version and row counts; records that do not parse and references to rows that are not
there are named, and the command exits 1."""

from __future__ import annotations

import json
from pathlib import Path

from skyc.model.managed_jobs import JobSpecDoc
from skyc.state.database import ClusterRecord
from skyc.state.managed_jobs import ManagedJobStore
from skyc.state.migrations import SCHEMA_VERSION
from tests.state.conftest import StateKind
from tests.state.team import ok, skyc


def _seed(state: StateKind) -> None:
    with state.open() as db:
        db.upsert_cluster(ClusterRecord(name="a", cloud="aws", status="UP"))
        db.upsert_cluster(ClusterRecord(name="b", cloud="local"))
        db.add_job("a", "train")
        db.add_event("a", "apply", "applied", {"n": 1})
        store = ManagedJobStore(db)
        job = store.add("mj", "/t.yaml", JobSpecDoc(), 1)
        store.open_attempt(job, 0, "skyc-job-1", "aws", 1.0)


def _home(tmp_path: Path, state: StateKind) -> Path:
    home = tmp_path / "home"
    if state.path is not None:   # the sqlite state is the file in SKYC_HOME
        state.path = home / "state.db"
    return home


def test_a_sound_state_passes(tmp_path: Path, state: StateKind) -> None:
    home = _home(tmp_path, state)
    _seed(state)
    out = ok(home, "state", "check", url=state.url)
    assert f"({state.kind}), schema version {SCHEMA_VERSION}" in out
    assert "no problems found" in out and "clusters                  2" in out
    doc = json.loads(ok(home, "state", "check", "--format", "json", url=state.url))
    assert doc["ok"] is True and doc["problems"] == [] and doc["kind"] == state.kind
    assert doc["tables"] == {"clusters": 2, "jobs": 1, "events": 1, "managed_jobs": 1,
                             "managed_attempts": 1, "managed_events": 1, "storage": 0,
                             "networks": 0}


def test_broken_records_are_named(tmp_path: Path, state: StateKind) -> None:
    home = _home(tmp_path, state)
    _seed(state)
    state.raw("UPDATE clusters SET nodes = 'not json' WHERE name = 'b'")
    state.raw("UPDATE jobs SET status = 'DONE'")
    state.raw("UPDATE clusters SET last_job = 77 WHERE name = 'a'")
    state.raw("UPDATE managed_jobs SET spec = ?", (json.dumps({"v": 1, "data": {"x": 1}}),))
    out = skyc(home, "state", "check", url=state.url)
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert "4 problem(s):" in out.stdout
    assert "clusters b: state database: cluster 'b' nodes holds invalid JSON" in out.stdout
    assert "jobs 1: status: Input should be 'PENDING'" in out.stdout
    assert "managed_jobs 1: x: Extra inputs are not permitted" in out.stdout
    assert "clusters a: its last job 77 is not in jobs" in out.stdout
    doc = json.loads(skyc(home, "state", "check", "--format", "json", url=state.url).stdout)
    assert doc["ok"] is False and doc["total_problems"] == 4
    assert {(p["table"], p["key"]) for p in doc["problems"]} == {
        ("clusters", "b"), ("jobs", "1"), ("managed_jobs", "1"), ("clusters", "a")}
