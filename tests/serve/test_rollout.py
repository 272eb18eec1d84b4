"""How the replicas move to a new version, round by round (:mod:`skyc.serve.rollout`,
pure), and the versions in the store (a real sqlite database, one made before the
versions' columns included)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from skyc.serve.records import Replica, Service
from skyc.serve.rollout import plan, serving
from skyc.serve.store import ServeStore


def _replica(rid: int, status: str = "READY", version: int = 1) -> Replica:
    return Replica("web", rid, f"web-{rid}", 20000 + rid, status, 0.0, version=version)


class Fleet:
    """The controller's rounds, with launches that become ready one round later."""

    def __init__(self, count: int) -> None:
        self.replicas = [_replica(i + 1) for i in range(count)]
        self.rounds: list[tuple[int, list[int]]] = []   # (ready, ids serving) per round

    def round(self, version: int, want: int, mode: str) -> bool:
        for r in self.replicas:
            if r.status == "STARTING":
                r.status = "READY"
        live = [r for r in self.replicas if r.live]
        moves = plan(live, version, want, mode, busy=())
        for r in moves.retire + moves.surplus:
            r.status = "SHUTTING_DOWN"
        for _ in range(moves.launch):
            self.replicas.append(_replica(len(self.replicas) + 1, "STARTING", version))
        ready = [r for r in self.replicas if r.status == "READY"]
        self.rounds.append((len(ready), [r.id for r in serving(ready, version, want, mode)]))
        return moves.updating


def test_a_rolling_update_replaces_one_replica_at_a_time_keeping_the_ready_count() -> None:
    fleet = Fleet(2)
    launched_per_round = []
    for _ in range(10):
        before = len(fleet.replicas)
        if not fleet.round(2, 2, "rolling"):
            break
        launched_per_round.append(len(fleet.replicas) - before)
    assert max(launched_per_round) == 1   # one new replica on its way at a time
    assert all(ready >= 2 for ready, _ in fleet.rounds), fleet.rounds
    live = [r for r in fleet.replicas if r.live]
    assert [(r.id, r.version, r.status) for r in live] == [(3, 2, "READY"), (4, 2, "READY")]
    # Old and new take traffic together meanwhile.
    assert any({1, 3} <= set(ids) or {2, 3} <= set(ids) for _, ids in fleet.rounds)


def test_a_blue_green_update_switches_traffic_at_once_when_the_new_set_is_ready() -> None:
    fleet = Fleet(2)
    assert fleet.round(2, 3, "blue_green")   # the new set (3 replicas) launched together
    assert [r.id for r in fleet.replicas if r.version == 2] == [3, 4, 5]
    assert fleet.rounds[-1] == (2, [1, 2])
    fleet.replicas[3].status = "PROVISIONING"   # one new replica is slower
    fleet.round(2, 3, "blue_green")
    assert fleet.rounds[-1][1] == [1, 2]   # two new ones ready: still only the old serve
    while fleet.round(2, 3, "blue_green"):
        fleet.replicas[3].status = "READY"
    assert fleet.rounds[-1] == (3, [3, 4, 5])
    assert [r.status for r in fleet.replicas[:2]] == ["SHUTTING_DOWN"] * 2
    for _, ids in fleet.rounds:   # never both versions at once
        assert ids in ([1, 2], [3, 4, 5]), fleet.rounds


def test_old_replicas_not_ready_go_at_once_and_busy_ones_wait() -> None:
    live = [_replica(1, "NOT_READY"), _replica(2), _replica(3, "STARTING")]
    moves = plan(live, 2, 2, "rolling", busy={3})
    assert [r.id for r in moves.retire] == [1] and moves.launch == 1 and moves.updating
    # Shrinking in the update: ready old replicas past the wanted count go too.
    moves = plan([_replica(1), _replica(2), _replica(3)], 2, 1, "rolling", busy=())
    assert [r.id for r in moves.retire] == [1, 2]


def test_without_an_update_it_reconciles_the_count() -> None:
    live = [_replica(1), _replica(2, "STARTING"), _replica(3)]
    moves = plan(live, 1, 1, None, busy=())
    assert moves.launch == 0 and not moves.retire and not moves.updating
    assert [r.id for r in moves.surplus] == [2, 3]   # not ready first, then the newest
    assert plan(live, 1, 5, None, busy=()).launch == 2


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SKYC_HOME", str(tmp_path))
    return tmp_path


def test_a_database_from_before_versions_gets_them(home: Path) -> None:
    path = home / "serve" / "services.db"
    path.parent.mkdir()
    with sqlite3.connect(path) as conn:   # the first version's tables
        conn.executescript("""
CREATE TABLE services (
  name TEXT PRIMARY KEY, status TEXT NOT NULL, created_at REAL NOT NULL,
  port INTEGER NOT NULL, task_file TEXT NOT NULL, cwd TEXT NOT NULL, envs TEXT NOT NULL,
  config TEXT NOT NULL, target INTEGER NOT NULL, down_requested INTEGER NOT NULL,
  failure TEXT, next_replica INTEGER NOT NULL);
CREATE TABLE replicas (
  service TEXT NOT NULL, id INTEGER NOT NULL, cluster TEXT NOT NULL, port INTEGER NOT NULL,
  status TEXT NOT NULL, launched_at REAL NOT NULL, started_at REAL, ready_at REAL,
  job_id INTEGER, why TEXT, log_tail TEXT NOT NULL, PRIMARY KEY (service, id));
INSERT INTO services VALUES ('web', 'READY', 0, 30001, 't.yaml', '/', '{}', '{}', 2, 0,
                             NULL, 2);
INSERT INTO replicas VALUES ('web', 1, 'web-1', 20001, 'READY', 0, 0, 0, 1, NULL, '[]');
""")
    conn.close()
    with ServeStore() as store:
        service = store.service("web")
        assert service is not None and (service.version, service.update_mode) == (1, None)
        assert store.replicas("web")[0].version == 1
        assert store.version_config("web", 1) is None   # probed as the latest says
    with ServeStore() as store:   # opened again: nothing more to add
        assert store.replicas("web")[0].version == 1


def test_each_update_takes_the_next_version_until_it_is_done(home: Path) -> None:
    with ServeStore() as store:
        store.add_service(Service(name="web", status="READY", created_at=0.0, port=30001,
                                  task_file="t.yaml", cwd="/", envs={}, config={}, target=2))
        seen: list[int] = []

        def record(version: int) -> dict[str, object]:
            seen.append(version)
            return {"task_file": f"t-{version}.yaml", "update_mode": "blue_green",
                    "config": {"version": version}}

        assert store.new_version("web", record) == 2
        assert store.new_version("web", record) == 3 and seen == [2, 3]
        assert not store.finish_update("web", 2)   # a later update is under way
        service = store.service("web")
        assert service is not None and service.update_mode == "blue_green"
        assert service.task_file == "t-3.yaml"
        assert store.version_config("web", 2) == {"version": 2}   # each version's kept
        assert store.version_config("web", 1) == {}
        assert store.finish_update("web", 3)
        service = store.service("web")
        assert service is not None and service.update_mode is None and service.version == 3
