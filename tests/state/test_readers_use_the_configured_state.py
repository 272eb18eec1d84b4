"""What plan and policy read of the state (the clusters in use for quotas, a cluster's
record for the diff and the saved plan's digest) comes from the state this user
configured: the team's PostgreSQL database as well as the local file."""

from __future__ import annotations

from pathlib import Path

import pytest

from skyc.apply.stack_diffs import state_record
from skyc.review.digests import of_cluster_state
from skyc.review.quotas import clusters_in_use
from tests.state.conftest import StateKind
from tests.state.test_state import _record


def test_readers_see_the_configured_state(state: StateKind, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    for key, value in state.env(home).items():
        monkeypatch.setenv(key, value)
    if state.path is not None:  # the local file is the one in SKYC_HOME
        state.path = home / "state.db"
    with state.open() as db:
        db.upsert_cluster(_record("c1", status="UP", hourly_cost=32.77))
    assert clusters_in_use() == {"c1": (8.0, 32.77)}
    found = state_record("c1")
    assert found is not None and found.region == "us-east-1"
    assert of_cluster_state("c1") != "absent"
    assert state_record("c2") is None


def test_no_state_is_created_by_readers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKYC_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("SKYC_STATE_URL", raising=False)
    assert clusters_in_use() == {} and state_record("c1") is None
    assert not (tmp_path / "home" / "state.db").exists()
