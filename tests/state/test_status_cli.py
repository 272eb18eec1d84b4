"""``skyc status`` as a user runs it: a real subprocess over a real state database (the
tests that take ``state`` run on sqlite and on PostgreSQL)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from skyc.cli.cmd_status import format_age, refresh_cluster, resources
from skyc.errors import StateError
from skyc.state.database import ClusterRecord, StateDB
from tests.state.conftest import StateKind
from tests.support.terraform import requires_terraform


def _skyc(home: Path, *args: str, url: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, SKYC_HOME=str(home), COLUMNS="200")
    env.pop("SKYC_STATE_URL", None)
    if url is not None:
        env["SKYC_STATE_URL"] = url
    return subprocess.run(
        [sys.executable, "-m", "skyc", *args], capture_output=True, text=True, env=env,
        timeout=60, cwd=Path(__file__).parents[2],
    )


def _open(home: Path, state: StateKind | None = None) -> StateDB:
    return state.open() if state is not None and state.url else StateDB(home / "state.db")


def _seed(home: Path, state: StateKind | None = None) -> None:
    with _open(home, state) as db:
        db.upsert_cluster(ClusterRecord(
            name="train", status="UP", cloud="aws", region="us-east-1", zone="us-east-1b",
            placement={"instance_type": "p4d.24xlarge", "accelerators": {"A100": 8},
                       "num_nodes": 2, "use_spot": True},
            nodes=[{"name": "head", "rank": 0, "ip": "10.0.0.1"},
                   {"name": "worker1", "rank": 1, "ip": "10.0.0.2"}],
            launched_at=time.time() - 7500, hourly_cost=65.54, engine="terraform",
        ))
        db.upsert_cluster(ClusterRecord(name="dev", cloud="local"))
        job = db.add_job("train", "pretrain")
        db.update_job(job, status="RUNNING")
        db.add_event("train", "failover", "InsufficientInstanceCapacity in us-east-1a",
                     {"blocked": "aws/us-east-1/us-east-1a"})
        db.add_event("train", "apply", "applied 13 resources")


def test_empty_state_is_friendly(tmp_path: Path, state: StateKind) -> None:
    out = _skyc(tmp_path, "status", url=state.url)
    assert out.returncode == 0, out.stderr
    assert "No clusters" in out.stdout
    json_out = _skyc(tmp_path, "status", "--format", "json", url=state.url)
    assert json_out.returncode == 0
    assert json.loads(json_out.stdout) == {"format_version": "1.4", "clusters": [], "orphans": [],
                                           "networks": []}


def test_unknown_cluster_is_an_error(tmp_path: Path, state: StateKind) -> None:
    out = _skyc(tmp_path, "status", "nope", url=state.url)
    assert out.returncode == 1
    assert "no cluster named 'nope'" in out.stderr
    assert "Traceback" not in out.stderr


def test_bad_format_is_an_error(tmp_path: Path) -> None:
    out = _skyc(tmp_path, "status", "--format", "yaml")
    assert out.returncode == 1 and "--format" in out.stderr and "Traceback" not in out.stderr


def test_table_lists_clusters(tmp_path: Path, state: StateKind) -> None:
    _seed(tmp_path, state)
    out = _skyc(tmp_path, "status", url=state.url)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split()[:2] == ["CLUSTER", "INFRA"]
    train = next(line for line in lines if line.startswith("train"))
    for text in ("aws/us-east-1/us-east-1b", "2x p4d.24xlarge (A100:8) [spot]", "UP",
                 "65.54", "2h 5m", "pretrain RUNNING"):
        assert text in train
    assert any(line.startswith("dev ") and "local" in line for line in lines)
    assert "Events" not in out.stdout


def test_verbose_shows_event_trail(tmp_path: Path, state: StateKind) -> None:
    _seed(tmp_path, state)
    out = _skyc(tmp_path, "status", "train", "-v", url=state.url)
    assert out.returncode == 0, out.stderr
    assert "dev" not in out.stdout
    trail = out.stdout[out.stdout.index("Events of train"):]
    assert trail.index("failover") < trail.index("apply")
    assert "InsufficientInstanceCapacity in us-east-1a" in trail


def test_json_output(tmp_path: Path, state: StateKind) -> None:
    _seed(tmp_path, state)
    out = _skyc(tmp_path, "status", "train", "--format", "json", "-v", url=state.url)
    assert out.returncode == 0, out.stderr
    (row,) = json.loads(out.stdout)["clusters"]
    assert row["name"] == "train" and row["status"] == "UP"
    assert row["infra"] == "aws/us-east-1/us-east-1b"
    assert [n["ip"] for n in row["nodes"]] == ["10.0.0.1", "10.0.0.2"]
    assert row["last_job"]["name"] == "pretrain" and row["last_job"]["status"] == "RUNNING"
    assert 7400 < row["age_s"] < 7700
    assert [e["kind"] for e in row["events"]] == ["failover", "apply"]
    assert row["events"][0]["data"] == {"blocked": "aws/us-east-1/us-east-1a"}


def test_refresh_cluster_sets_status_from_probe(tmp_path: Path, state: StateKind) -> None:
    _seed(tmp_path, state)
    seen: list[str] = []

    def probe(record: ClusterRecord) -> str:
        seen.append(record.name)
        return "STOPPED"

    with _open(tmp_path, state) as db:
        updated = refresh_cluster(db, "train", probe)
        assert seen == ["train"] and updated.status == "STOPPED"
        stored = db.get_cluster("train")
        assert stored is not None and stored.status == "STOPPED"
        assert db.events("train")[-1].kind == "refresh"
        count = len(db.events("train"))
        refresh_cluster(db, "train", probe)  # no change: no new event
        assert len(db.events("train")) == count
        with pytest.raises(StateError, match="probe returned 'GONE'"):
            refresh_cluster(db, "train", lambda r: "GONE")
        with pytest.raises(StateError, match="no cluster named 'x'"):
            refresh_cluster(db, "x", probe)


def test_formatting_helpers() -> None:
    assert format_age(None) == "-"
    assert format_age(59) == "59s"
    assert format_age(61) == "1m"
    assert format_age(3 * 86400 + 7200) == "3d 2h"
    assert resources({}) == "-"
    assert resources({"instance_type": "n2-standard-8", "accelerators": {"L4": 0.5}}) == (
        "n2-standard-8 (L4:0.5)"
    )


# -- refresh against real local clusters (real terraform, real node directories) ----


def _decide(**record: Any) -> tuple[str, str]:
    from skyc.apply.reconcile import decide

    seen = record.pop("seen")
    base: dict[str, Any] = {"name": "c", "cloud": "local", "status": "UP"}
    return decide(ClusterRecord(**{**base, **record}), seen)


def test_decide_never_says_stopped_or_up_without_nodes() -> None:
    from skyc.apply.reconcile import Observed

    up = {"launched_at": 1.0, "nodes": [{"name": "head"}, {"name": "worker1"}]}
    whole = Observed("/ws", stack=True, managed=2)
    assert _decide(**up, seen=whole) == ("UP", "")
    # Never came up (killed before or while the engine ran): INIT, whatever the engine holds.
    for seen in (Observed("/ws", stack=False), Observed("/ws", stack=True),
                 Observed("/ws", stack=True, managed=2)):
        status, note = _decide(status="INIT", seen=seen)
        assert status == "INIT" and note.startswith("provisioning did not finish"), note
        assert _decide(status="UP", seen=seen)[0] == "INIT"  # recorded UP, but no nodes
    assert _decide(status="FAILED", seen=Observed("/ws", stack=True))[0] == "FAILED"
    # Came up, then terminated outside skyc (wholly or in part): INIT with what is gone.
    status, note = _decide(**up, seen=Observed("/ws", stack=True, managed=0))
    assert status == "INIT" and "holds none of its resources" in note
    status, note = _decide(**up, seen=Observed("/ws", stack=True, managed=5,
                                               gone=("aws_instance.node_0",)))
    assert status == "INIT" and "deleted outside skyc: aws_instance.node_0" in note
    status, note = _decide(**up, seen=Observed("/ws", stack=True, managed=2,
                                               missing_nodes=("head", "worker1")))
    assert status == "INIT" and "every node directory is gone: head, worker1" in note
    status, note = _decide(**up, seen=Observed("/ws", stack=False))
    assert status == "INIT" and "its stack is missing from /ws" in note
    # A cluster skyc stopped stays STOPPED while its resources are there.
    assert _decide(**up, status="STOPPED", seen=whole) == ("STOPPED", "")
    assert _decide(launched_at=1.0, status="STOPPED", seen=whole) == ("STOPPED", "")
    assert _decide(**up, status="STOPPED", seen=Observed("/ws", stack=True))[0] == "INIT"


def _local_placement(home: Path, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[
        Any, Any]:
    from skyc.apply.launch import LaunchOptions, make_plan
    from skyc.task import load_tasks

    monkeypatch.setenv("SKYC_HOME", str(home))
    task_file = tmp / "k.yaml"
    task_file.write_text("name: k\nnum_nodes: 2\nresources:\n  infra: local\nrun: echo hi\n")
    [task] = load_tasks(task_file).tasks
    placement = make_plan([task], LaunchOptions()).tasks[0].placement
    return placement, task.candidates()[placement.candidate_index]


def _refreshed(home: Path, name: str) -> dict[str, Any]:
    out = _skyc(home, "status", name, "--refresh", "--format", "json", "-v")
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    (row,) = json.loads(out.stdout)["clusters"]
    assert isinstance(row, dict)
    return row


@requires_terraform
def test_refresh_of_a_cluster_killed_before_its_engine_ran_is_init_not_stopped(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from skyc.apply.provision import plan_changes

    home = tmp_path / "home"
    placement, candidate = _local_placement(home, tmp_path, monkeypatch)
    with StateDB(home / "state.db") as db:  # what apply records before the engine runs
        db.upsert_cluster_from_placement("k", placement, status="INIT", engine="terraform")
    row = _refreshed(home, "k")  # nothing written yet either
    assert row["status"] == "INIT", row
    # The stack written and the engine initialized and planned, then the kill.
    plan_changes("k", placement, candidate)
    row = _refreshed(home, "k")
    assert row["status"] == "INIT", row
    out = _skyc(home, "status", "k", "-v")
    assert "provisioning did not finish: nothing was created" in " ".join(out.stdout.split())
    assert _skyc(home, "destroy", "k", "--yes").returncode == 0


@requires_terraform
def test_refresh_of_a_cluster_killed_while_its_engine_ran_is_not_up_with_no_nodes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from skyc.apply.provision import provision

    home = tmp_path / "home"
    placement, candidate = _local_placement(home, tmp_path, monkeypatch)
    with StateDB(home / "state.db") as db:
        db.upsert_cluster_from_placement("k", placement, status="INIT", engine="terraform")
    provision("k", placement, candidate)  # resources made; killed before it was marked UP
    row = _refreshed(home, "k")
    assert (row["status"], row["nodes"]) == ("INIT", []), row
    assert "the engine's state holds 2 resource(s)" in row["events"][-1]["message"]
    assert _skyc(home, "destroy", "k", "--yes").returncode == 0


@requires_terraform
def test_refresh_of_a_cluster_whose_nodes_were_all_removed_is_init(tmp_path: Path) -> None:
    home = tmp_path / "home"
    task = tmp_path / "k.yaml"
    task.write_text("name: k\nnum_nodes: 2\nresources:\n  infra: local\nrun: echo hi\n")
    out = _skyc(home, "apply", str(task), "--yes")
    assert out.returncode == 0, out.stderr
    row = _refreshed(home, "k")
    assert row["status"] == "UP"
    for node in row["nodes"]:
        shutil.rmtree(node["node_dir"])
    row = _refreshed(home, "k")
    assert row["status"] == "INIT", row
    assert "every node directory is gone: head, worker1" in row["events"][-1]["message"]
    assert row["last_job"]["status"] == "SUCCEEDED"  # history is kept
    assert _skyc(home, "destroy", "k", "--yes").returncode == 0
    assert json.loads(_skyc(home, "status", "--format", "json").stdout)["clusters"] == []
