"""Two people racing past a quota: the policy gate's check and the record of the
cluster it admits are one step for everyone sharing the state, so the second sees the
first and is refused. Real parts: the policy gate apply uses, the state (a sqlite file,
and a database on a real PostgreSQL server), its locks (a file lock, an advisory lock);
each person is a thread with a connection of its own."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from skyc.apply.admission import admit_and_record
from skyc.errors import PolicyViolation
from skyc.model.plan import Placement
from skyc.review.admit import policy_gate
from skyc.review.policy import Policy
from skyc.state.database import StateDB
from skyc.task import load_tasks
from tests.state.conftest import StateKind

A100x8 = Placement(cloud="aws", region="us-east-1", zone="us-east-1a",
                   instance_type="p4d.24xlarge", accelerators={"A100": 8}, num_nodes=1,
                   hourly_cost=32.8)


@pytest.fixture
def gate(state: StateKind, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
         ) -> Callable[[str, Placement], None]:
    """The policy gate of a task of 8 A100s under a quota of 8 GPUs, widened: each
    check takes half a second more before its answer (as a slow network would)."""
    monkeypatch.setenv("SKYC_HOME", str(tmp_path))
    if state.url:
        monkeypatch.setenv("SKYC_STATE_URL", state.url)
    monkeypatch.setenv("SKYC_USER", "alice")
    task_file = tmp_path / "train.yaml"
    task_file.write_text("resources:\n  accelerators: A100:8\n  infra: aws\nrun: train\n")
    task = load_tasks(task_file).tasks[0]
    policy = Policy(users={"alice": {"max_gpus": 8}})
    admit = policy_gate(policy, tmp_path / "policy.yaml", task, allow=False)

    def slow(name: str, placement: Placement) -> None:
        admit(name, placement)
        time.sleep(0.5)

    return slow


def _race(step: Callable[[str], None]) -> list[BaseException | None]:
    outcomes: list[BaseException | None] = [None, None]

    def person(i: int) -> None:
        try:
            step(f"train-{i}")
        except BaseException as exc:
            outcomes[i] = exc

    threads = [threading.Thread(target=person, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    return outcomes


def _record(name: str) -> Callable[[], None]:
    def record() -> None:
        with StateDB() as db:
            db.upsert_cluster_from_placement(name, A100x8, status="INIT", engine="terraform")
    return record


def test_two_racing_past_a_quota_one_is_refused(
        gate: Callable[[str, Placement], None]) -> None:
    outcomes = _race(lambda name: admit_and_record(gate, name, A100x8, _record(name)))
    refused = [o for o in outcomes if o is not None]
    assert len(refused) == 1 and isinstance(refused[0], PolicyViolation), outcomes
    assert "16 GPUs in use with this plan (8 already)" in str(refused[0])
    with StateDB() as db:
        assert len([c for c in db.list_clusters() if c.status == "INIT"]) == 1


def test_without_one_step_both_would_pass(gate: Callable[[str, Placement], None]) -> None:
    """The race the step closes is real: the same check and record, apart, admit both."""
    def apart(name: str) -> None:
        gate(name, A100x8)
        _record(name)()

    assert _race(apart) == [None, None]
    with StateDB() as db:
        assert len(db.list_clusters()) == 2
