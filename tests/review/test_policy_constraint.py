"""The policy is a constraint of the optimizer: plan picks the cheapest placement the
policy allows and says which better ones it excluded; a violation is left only where
nothing the task allows passes (the real CLI, no credentials)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.plan_diff.test_plan_diff import home, skyc

__all__ = ["home"]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _task(tmp_path: Path, policy: str) -> str:
    task = tmp_path / "train.yaml"
    task.write_text((EXAMPLES / "train-a100.yaml").read_text())
    (tmp_path / "skyc-policy.yaml").write_text(policy)
    return str(task)


def test_plan_places_on_an_allowed_cloud(tmp_path: Path, home: Path) -> None:
    task = _task(tmp_path, "allowed_clouds: [aws]\n")
    out = skyc(home, "plan", task, "--no-diff", "--format", "json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    [planned] = doc["tasks"]
    assert planned["placement"]["cloud"] == "aws"
    assert all(a["cloud"] == "aws" for a in planned["alternatives"])
    assert doc["policy"]["ok"] is True
    assert "the policy excluded" in planned["reason"] and "gcp" in planned["reason"]
    table = skyc(home, "plan", task, "--no-diff")
    assert table.returncode == 0
    assert "policy: train-a100: the policy excluded" in table.stdout


def test_regions_and_spot_rules_steer_the_plan(tmp_path: Path, home: Path) -> None:
    task = _task(tmp_path, "allowed_regions: [us-west-2]\nspot: forbidden\n")
    out = skyc(home, "plan", task, "--no-diff", "--format", "json")
    assert out.returncode == 0, out.stderr
    placement = json.loads(out.stdout)["tasks"][0]["placement"]
    assert placement["region"] == "us-west-2" and placement["use_spot"] is False


def test_a_task_that_pins_what_the_policy_refuses_is_still_a_violation(
    tmp_path: Path, home: Path
) -> None:
    task = _task(tmp_path, "allowed_clouds: [aws]\n")
    out = skyc(home, "plan", task, "--no-diff", "--infra", "gcp", "--format", "json")
    assert out.returncode == 1, out.stderr
    doc = json.loads(out.stdout)
    assert doc["tasks"][0]["placement"]["cloud"] == "gcp"
    assert [v["rule"] for v in doc["policy"]["violations"]] == ["allowed_clouds"]
