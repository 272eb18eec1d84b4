"""Every record carries its owner: ``status``, ``queue`` and ``jobs queue`` list the
caller's own (everyone's with ``-u``), and ``down``, ``stop`` and ``exec`` on another
user's cluster ask first (or need ``--yes``), recording who acted.

Two users are two ``SKYC_HOME`` dirs whose config.yaml names a different ``user:`` and
the same PostgreSQL state; a sqlite state is one user's, so there the records of another
owner are written in place (as a migrated or merged state holds them). The team tests
share one real ``local`` cluster (real terraform), applied once for the module."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from skyc.apply.ownership import check_owner, record_override
from skyc.errors import ConfigError
from skyc.model.managed_jobs import JobSpecDoc
from skyc.state.database import ClusterRecord, StateDB
from skyc.state.managed_jobs import ManagedJobStore
from skyc.state.migrations import MIGRATIONS, SCHEMA_VERSION
from tests.state.conftest import StateKind
from tests.support.postgres import PostgresServer
from tests.support.terraform import requires_terraform

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.xdist_group("state-owners")


def _env(home: Path, url: str | None) -> dict[str, str]:
    env = dict(os.environ, SKYC_HOME=str(home), COLUMNS="200", NO_COLOR="1")
    env.pop("SKYC_STATE_URL", None)
    if url is not None:
        env["SKYC_STATE_URL"] = url
    return env


def run(home: Path, *args: str, url: str | None = None) -> subprocess.CompletedProcess[str]:
    """``skyc ARGS`` as the user of ``home`` runs it, stdin not a terminal."""
    return subprocess.run([sys.executable, "-m", "skyc", *args], capture_output=True,
                          text=True, env=_env(home, url), timeout=120, cwd=ROOT,
                          stdin=subprocess.DEVNULL)


def answering(home: Path, answer: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``skyc ARGS`` with a terminal on stdin, where ``answer`` is typed."""
    master, slave = os.openpty()
    try:
        os.write(master, answer.encode() + b"\n")
        return subprocess.run([sys.executable, "-m", "skyc", *args], capture_output=True,
                              text=True, env=_env(home, None), timeout=120, cwd=ROOT,
                              stdin=slave)
    finally:
        os.close(slave)
        os.close(master)


def ok(home: Path, *args: str, url: str | None = None) -> str:
    out = run(home, *args, url=url)
    assert out.returncode == 0, (args, out.stdout[-2000:], out.stderr[-2000:])
    return out.stdout


def user_home(path: Path, user: str, url: str | None = None) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.yaml").write_text(f"user: {user}\n" + (f"state: {url}\n" if url else ""))
    return path


def names(doc: str) -> dict[str, str | None]:
    """cluster -> owner, from ``status --format json``."""
    return {c["name"]: c["owner"] for c in json.loads(doc)["clusters"]}


# -- one state, records of two owners (sqlite and PostgreSQL) -------------------


def _seed(state: StateKind) -> None:
    with state.open() as db:
        db.upsert_cluster(ClusterRecord(name="mine", cloud="local", owner="bob"))
        db.upsert_cluster(ClusterRecord(name="theirs", cloud="local", owner="alice"))
        for who in ("alice", "bob"):
            db.add_job("theirs", f"job-of-{who}", owner=who, job_id=1 if who == "alice" else 2)
        managed = ManagedJobStore(db)
        for who in ("alice", "bob"):
            job = managed.add(f"mj-{who}", "/t.yaml", JobSpecDoc(), 1, owner=who)
            managed.set_status(job, "SUCCEEDED", "done")


def test_a_listing_shows_the_callers_own_and_everyones_with_u(
        tmp_path: Path, state: StateKind) -> None:
    home = user_home(tmp_path / "bob", "bob")
    state = StateKind(state.kind, path=home / "state.db", url=state.url)
    _seed(state)
    assert names(ok(home, "status", "--format", "json", url=state.url)) == {"mine": "bob"}
    assert names(ok(home, "status", "-u", "--format", "json", url=state.url)) == {
        "mine": "bob", "theirs": "alice"}
    table = ok(home, "status", "--all-users", url=state.url).splitlines()
    assert table[0].split()[:3] == ["CLUSTER", "OWNER", "INFRA"]
    assert any(line.split()[:2] == ["theirs", "alice"] for line in table)
    assert "OWNER" not in ok(home, "status", url=state.url)
    jobs = json.loads(ok(home, "jobs", "queue", "--format", "json", url=state.url))
    assert jobs["format_version"] == "1.1"
    assert [(j["name"], j["owner"]) for j in jobs["jobs"]] == [("mj-bob", "bob")]
    everyone = json.loads(ok(home, "jobs", "queue", "-u", "--format", "json", url=state.url))
    assert [j["owner"] for j in everyone["jobs"]] == ["alice", "bob"]
    assert "OWNER" in ok(home, "jobs", "queue", "-u", url=state.url)


def test_nothing_of_ones_own_says_where_the_others_are(tmp_path: Path, state: StateKind) -> None:
    home = user_home(tmp_path / "carol", "carol")
    with (StateDB(url=state.url) if state.url else StateDB(home / "state.db")) as db:
        db.upsert_cluster(ClusterRecord(name="theirs", cloud="local", owner="alice"))
    out = ok(home, "status", url=state.url)
    assert "No clusters of yours; 1 of other users (`skyc status -u` lists it)" in out


def test_an_owner_is_set_once_and_jobs_and_events_carry_the_caller(
        tmp_path: Path, state: StateKind, monkeypatch: pytest.MonkeyPatch) -> None:
    home = user_home(tmp_path / "home", "alice")
    monkeypatch.setenv("SKYC_HOME", str(home))
    workspace = home / "clusters" / "c1"
    with state.open() as db:
        db.upsert_cluster(ClusterRecord(name="c1", cloud="local", workspace=str(workspace)))
        job = db.add_job("c1", "first")
        db.add_event("c1", "apply", "applied")
    (home / "config.yaml").write_text("user: bob\n")
    with state.open() as db:
        db.upsert_cluster(ClusterRecord(name="c1", status="UP", cloud="local",
                                        workspace=str(workspace)))
        db.add_event("c1", "exec", "by bob")
        record = db.get_cluster("c1")
        assert record is not None and record.owner == "alice" and record.status == "UP"
        db.add_job("c1", "second")
        assert [(j.id == job, j.owner) for j in db.list_jobs("c1")] == [
            (True, "alice"), (False, "bob")]
        assert [e.actor for e in db.events("c1")] == ["alice", "bob"]


def test_a_new_records_owner_is_the_one_its_workspace_recorded(
        tmp_path: Path, state: StateKind, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cluster recorded again (an adopted workspace) keeps the owner it was made by."""
    home = user_home(tmp_path / "home", "bob")
    monkeypatch.setenv("SKYC_HOME", str(home))
    workspace = home / "clusters" / "kept"
    workspace.mkdir(parents=True)
    (workspace / "owner").write_text("alice\n")
    with state.open() as db:
        db.upsert_cluster(ClusterRecord(name="kept", cloud="local", workspace=str(workspace)))
        record = db.get_cluster("kept")
    assert record is not None and record.owner == "alice"


# -- asking before acting on another's cluster -----------------------------------


def test_check_owner_asks_or_refuses_naming_the_owner_and_the_flag(
        tmp_path: Path, state: StateKind, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKYC_HOME", str(user_home(tmp_path / "home", "bob")))
    asked: list[str] = []

    def answer(value: bool) -> Callable[[str], bool]:
        def ask(question: str) -> bool:
            asked.append(question)
            return value
        return ask

    with state.open() as db:
        db.upsert_cluster(ClusterRecord(name="theirs", cloud="local", owner="alice"))
        db.upsert_cluster(ClusterRecord(name="mine", cloud="local", owner="bob"))
        assert check_owner("mine", "destroy", False, None, db) is None
        assert check_owner("unknown", "destroy", False, None, db) is None
        with pytest.raises(ConfigError, match="cluster theirs belongs to alice: refusing to "
                           "destroy it without --yes") as refused:
            check_owner("theirs", "destroy", False, None, db)
        assert "--yes" in (refused.value.hint or "") and "bob" in (refused.value.hint or "")
        with pytest.raises(ConfigError, match="belongs to alice: left as it is"):
            check_owner("theirs", "stop", False, answer(False), db)
        assert check_owner("theirs", "exec", False, answer(True), db) == "alice"
        assert asked == ["cluster theirs belongs to alice; stop it anyway?",
                         "cluster theirs belongs to alice; run a job on it anyway?"]
        assert check_owner("theirs", "destroy", True, None, db) == "alice"
        record_override("theirs", "destroy", "alice", db)
        [event] = db.events("theirs")
    assert (event.kind, event.actor) == ("override", "bob")
    assert event.message == "bob destroyed the cluster of alice"


# -- a state written before owners were -------------------------------------------


def _old_state(state: StateKind) -> None:
    """A state at schema version 4 (before owners), with a cluster, a job and a
    managed job."""
    if state.url is None:
        from skyc.state.database import connect, migrate

        assert state.path is not None
        conn = connect(state.path)
        migrate(conn, upto=4)
        conn.close()
    else:
        import psycopg

        from skyc.state.pg_store import PostgresTx

        with psycopg.connect(state.url, autocommit=True) as conn, conn.transaction():
            for step in MIGRATIONS[:4]:
                step(PostgresTx(conn))  # type: ignore[arg-type]
            conn.execute("CREATE TABLE skyc_schema (id INTEGER PRIMARY KEY, version INTEGER)")
            conn.execute("INSERT INTO skyc_schema VALUES (1, 4)")
    empty = json.dumps({"v": 1, "data": {}})
    state.raw("INSERT INTO clusters (name, status, cloud, placement, nodes, hourly_cost,"
              " updated_at) VALUES ('old', 'UP', 'local', ?, ?, 0, 1.0)",
              (empty, json.dumps({"v": 1, "data": []})))
    state.raw("INSERT INTO jobs (cluster, name, status, submitted_at, exit_codes, job_id)"
              " VALUES ('old', 'j', 'SUCCEEDED', 1.0, ?, 1)", (empty,))
    state.raw("INSERT INTO events (cluster, ts, kind, message) VALUES ('old', 1.0, 'apply',"
              " 'applied')")
    state.raw("INSERT INTO managed_jobs (name, status, task_path, spec, submitted_at,"
              " updated_at) VALUES ('mj', 'SUCCEEDED', '/t.yaml', ?, 1.0, 1.0)",
              (json.dumps({"v": 1, "data": JobSpecDoc().model_dump(mode="json")}),))


def test_a_migrated_state_still_shows_its_records(tmp_path: Path, state: StateKind) -> None:
    home = user_home(tmp_path / "home", "bob")
    state = StateKind(state.kind, path=home / "state.db", url=state.url)
    _old_state(state)
    doc = json.loads(ok(home, "status", "-v", "--format", "json", url=state.url))
    assert doc["format_version"] == "1.4" and doc["networks"] == []  # migrated up to 8
    [cluster] = doc["clusters"]
    assert cluster["name"] == "old" and cluster["owner"] is None
    assert cluster["events"][0]["actor"] is None
    assert "old" in ok(home, "status", url=state.url)
    [job] = json.loads(ok(home, "jobs", "queue", "--format", "json", url=state.url))["jobs"]
    assert job["name"] == "mj" and job["owner"] is None
    with state.open() as db:
        assert [c.name for c in db.list_clusters(owner="anyone")] == ["old"]
        assert db.list_jobs("old")[0].owner is None
    assert f"schema version {SCHEMA_VERSION}" in ok(home, "state", "check", url=state.url)


# -- two users, one PostgreSQL state, a real local cluster ------------------------


@dataclass
class Team:
    url: str
    alice: Path
    bob: Path


TASK = "name: ac\nresources:\n  infra: local\nrun: echo hi-from-alice\n"


@pytest.fixture(scope="module")
def team(postgres_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory
         ) -> Iterator[Team]:
    """alice's cluster ``ac`` (local, one node, one job) in a state bob shares. bob's
    home sees alice's cluster workspaces (a shared disk), so he can act on them."""
    root = tmp_path_factory.mktemp("team")
    url = postgres_server.create_database()
    alice = user_home(root / "alice", "alice", url)
    bob = user_home(root / "bob", "bob", url)
    (alice / "clusters").mkdir()
    (bob / "clusters").symlink_to(alice / "clusters")
    (root / "ac.yaml").write_text(TASK)
    ok(alice, "apply", str(root / "ac.yaml"), "--yes")
    try:
        yield Team(url, alice, bob)
    finally:
        run(alice, "down", "ac", "--yes")


@requires_terraform
def test_bob_lists_only_his_own_and_alices_with_u(team: Team) -> None:
    assert names(ok(team.alice, "status", "--format", "json")) == {"ac": "alice"}
    assert names(ok(team.bob, "status", "--format", "json")) == {}
    assert names(ok(team.bob, "status", "-u", "--format", "json")) == {"ac": "alice"}
    assert any(line.split()[:2] == ["ac", "alice"]
               for line in ok(team.bob, "status", "-u").splitlines())
    queue = json.loads(ok(team.alice, "queue", "--format", "json"))
    assert [(j["cluster"], j["owner"]) for j in queue["jobs"]] == [("ac", "alice")]
    assert queue["format_version"] == "2.1"
    assert json.loads(ok(team.bob, "queue", "--format", "json"))["jobs"] == []
    theirs = json.loads(ok(team.bob, "queue", "-u", "--format", "json"))["jobs"]
    assert [(j["cluster"], j["owner"]) for j in theirs] == [("ac", "alice")]
    assert any(line.split()[:4] == ["CLUSTER", "ID", "NAME", "OWNER"]
               for line in ok(team.bob, "queue", "-u").splitlines())


@requires_terraform
def test_bob_is_refused_without_yes_and_nothing_happens(team: Team) -> None:
    for command in (("down", "ac"), ("stop", "ac"), ("exec", "ac", "echo by-bob")):
        out = run(team.bob, *command)
        assert out.returncode == 1, (command, out.stdout, out.stderr)
        assert "cluster ac belongs to alice" in out.stderr, out.stderr
        assert "--yes" in out.stderr and "Traceback" not in out.stderr
    asked = answering(team.bob, "n", "down", "ac")
    assert asked.returncode == 1, (asked.stdout, asked.stderr)
    assert "cluster ac belongs to alice; destroy it anyway? [y/N]" in asked.stderr
    assert "left as it is" in asked.stderr
    assert names(ok(team.bob, "status", "-u", "--format", "json")) == {"ac": "alice"}
    assert (team.alice / "clusters" / "ac" / "cluster.json").is_file()
    with StateDB(url=team.url) as db:
        assert [e for e in db.events("ac") if e.actor == "bob"] == []


@requires_terraform
def test_a_teammate_without_the_clusters_workspace_is_told_whose_it_is(
        team: Team, tmp_path: Path) -> None:
    """carol shares the state, not alice's disk: her down of alice's cluster says where
    its stack is and what to do, and leaves it as it is."""
    carol = user_home(tmp_path / "carol", "carol", team.url)
    out = run(carol, "down", "ac", "--yes")
    assert out.returncode != 0 and "Traceback" not in out.stderr
    assert "cluster 'ac' belongs to alice: its stack and engine state are in the " \
           "SKYC_HOME it was created from" in " ".join(out.stderr.split())
    assert "remote backend" in out.stderr
    assert names(ok(team.bob, "status", "-u", "--format", "json")) == {"ac": "alice"}
    assert (team.alice / "clusters" / "ac" / "cluster.json").is_file()


@requires_terraform
def test_bob_acts_with_yes_and_the_events_name_him(team: Team) -> None:
    assert "by-bob" in ok(team.bob, "exec", "ac", "echo by-bob", "--yes")
    theirs = json.loads(ok(team.bob, "queue", "--format", "json"))["jobs"]
    assert [(j["id"], j["owner"]) for j in theirs] == [(2, "bob")]
    trail = ok(team.alice, "status", "ac", "-v")
    assert "bob ran a job on the cluster of alice (by bob)" in trail
    ok(team.bob, "down", "ac", "--yes")
    assert names(ok(team.alice, "status", "-u", "--format", "json")) == {}
    with StateDB(url=team.url) as db:
        [event] = db.events("ac")
    assert (event.kind, event.actor) == ("override", "bob")
    assert event.message == "bob destroyed the cluster of alice"
    assert event.data == {"owner": "alice", "actor": "bob", "doing": "destroy"}


def test_a_copy_into_postgresql_keeps_owners_and_actors(tmp_path: Path,
                                                        postgres_url: str) -> None:
    from skyc.state.pg_store import PostgresStore
    from skyc.state.sqlite_store import SqliteStore
    from skyc.state.transfer import copy_state

    with StateDB(tmp_path / "state.db") as db:
        db.upsert_cluster(ClusterRecord(name="c", cloud="local", owner="alice"))
        db.add_job("c", "j", owner="bob")
        db.add_event("c", "apply", "applied", actor="carol")
        ManagedJobStore(db).add("mj", "/t.yaml", JobSpecDoc(), 1, owner="dave")
    conn = sqlite3.connect(tmp_path / "state.db")
    try:
        assert conn.execute("SELECT owner FROM clusters").fetchall() == [("alice",)]
    finally:
        conn.close()
    StateDB(url=postgres_url).close()
    source, target = SqliteStore(tmp_path / "state.db"), PostgresStore(postgres_url)
    try:
        copy_state(source, target)
    finally:
        source.close()
        target.close()
    with StateDB(url=postgres_url) as db:
        record = db.get_cluster("c")
        assert record is not None and record.owner == "alice"
        assert [j.owner for j in db.list_jobs("c")] == ["bob"]
        assert [e.actor for e in db.events("c")] == ["carol"]
        assert [j.owner for j in ManagedJobStore(db).all_jobs()] == ["dave"]
