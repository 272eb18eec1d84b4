"""Failover after a reviewed plan: only the plan's placements, each checked by the
policy gate (the gate is the real one, with a real state database)."""

from __future__ import annotations

from pathlib import Path

import pytest

from skyc.errors import InfeasibleError
from skyc.launch import reviewed_next
from skyc.optimizer.blocked import Blocked
from skyc.optimizer.plan import Placement
from skyc.review.admit import PolicyViolation, policy_gate
from skyc.review.policy import Policy
from skyc.task import Task


def at(region: str, cost: float = 1.0) -> Placement:
    return Placement(cloud="aws", region=region, zone=f"{region}a",
                     instance_type="m6i.large", hourly_cost=cost)


def test_failover_stays_inside_the_reviewed_placements() -> None:
    listed = [at("us-east-1"), at("us-west-2")]
    assert reviewed_next(listed, [Blocked(cloud="aws", region="us-east-1")]) == listed[1]
    with pytest.raises(InfeasibleError, match="every placement the reviewed plan lists"):
        reviewed_next(listed, [Blocked(cloud="aws")])


def test_the_gate_refuses_or_records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKYC_HOME", str(tmp_path / "skyc-home"))
    task = Task.model_validate({"name": "t", "run": "true"})
    policy = Policy(allowed_regions=["us-east-1"])
    gate = policy_gate(policy, Path("p.yaml"), task, allow=False)
    gate("t", at("us-east-1"))                          # allowed: nothing happens
    with pytest.raises(PolicyViolation, match="aws/us-west-2/us-west-2a for cluster t"):
        gate("t", at("us-west-2"))                      # a failover re-target elsewhere
    assert not (tmp_path / "skyc-home" / "state.db").exists()
    policy_gate(policy, Path("p.yaml"), task, allow=True)("t", at("us-west-2"))
    from skyc.state import StateDB

    with StateDB() as db:
        [event] = [e for e in db.events("t") if e.kind == "policy"]
    assert "allowed_regions" in event.message
