"""Failover after a reviewed plan: only the plan's placements, each checked by the
policy gate (the gate is the real one, with a real state database)."""

from __future__ import annotations

from pathlib import Path

import pytest

from skyc.apply.launch import reviewed_next
from skyc.errors import InfeasibleError, PolicyViolation, SkycError
from skyc.model.plan import Placement
from skyc.optimizer.blocked import Blocked
from skyc.review.admit import policy_gate
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
    from skyc.state.database import StateDB

    with StateDB() as db:
        [event] = [e for e in db.events("t") if e.kind == "policy"]
    assert "allowed_regions" in event.message


def _no_aws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKYC_HOME", str(tmp_path / "skyc-home"))
    monkeypatch.setenv("HOME", str(tmp_path))           # no ~/.aws here
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE",
                "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(key, raising=False)


@pytest.mark.parametrize("answer", [None, False, True])
def test_when_every_reviewed_placement_failed_it_asks_or_stops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answer: bool | None
) -> None:
    """The attempt on aws fails for real (no credentials here: skyc's own check, no
    engine run); the plan lists no other placement."""
    from skyc.apply.launch import LaunchOptions, ReviewedPlacements, launch
    from tests.review.test_reviewed_apply import Quiet

    _no_aws(tmp_path, monkeypatch)
    task = Task.model_validate({"name": "t", "resources": {"infra": "aws/us-east-1",
                                                           "instance_type": "m6i.large"}})
    asked: list[str] = []

    def ask(question: str) -> bool:
        asked.append(question)
        return bool(answer)

    reviewed = ReviewedPlacements(placements=[at("us-east-1")], changes=[],
                                  ask=None if answer is None else ask)
    with pytest.raises(SkycError) as info:
        launch([task], LaunchOptions(infra="aws/us-east-1", reviewed=reviewed), Quiet())
    assert "no placement is left to try" in str(info.value)
    assert "aws/us-east-1" in str(info.value) and "no aws credentials" in str(info.value)
    if answer is None:   # a non-interactive run: stops, asks nothing
        assert asked == []
    else:                # asked once (told yes, the optimizer finds aws blocked too)
        [question] = asked
        assert question.startswith("every placement the reviewed plan lists has failed")
        assert "aws/*/* failed" in question and "Plan again outside" in question
