"""Policy and quotas: the rules on their own, and through ``skyc plan`` / ``skyc apply``
(real subprocesses, real terraform on ``local``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skyc.errors import ConfigError
from skyc.model.plan import Placement
from skyc.review.policy import Planned, Policy, Usage, evaluate, load_policy
from tests.plan_diff.test_plan_diff import skyc
from tests.support.terraform import requires_terraform

A100x8 = Placement(cloud="aws", region="us-east-1", zone="us-east-1a",
                   instance_type="p4d.24xlarge", accelerators={"A100": 8}, num_nodes=2,
                   hourly_cost=65.0)


def rules(found: list[object]) -> list[str]:
    return [v.rule for v in found]  # type: ignore[attr-defined]


def test_each_rule_names_itself() -> None:
    policy = Policy(allowed_clouds=["gcp"], allowed_regions=["aws/us-west-2"],
                    max_hourly_cost_per_cluster=10, max_hourly_cost_total=20,
                    max_accelerators_per_cluster=8, spot="required",
                    required_labels=["team"], allowed_instance_families=["g5"])
    found = evaluate(policy, [Planned("big", A100x8)], Usage(), None)
    assert rules(found) == ["allowed_clouds", "allowed_regions",
                            "max_hourly_cost_per_cluster", "max_accelerators_per_cluster",
                            "spot", "required_labels", "allowed_instance_families",
                            "max_hourly_cost_total"]
    assert "p4d.24xlarge (family p4d)" in found[6].message
    ok = Policy(allowed_clouds=["aws"], allowed_regions=["us-east-1"], spot="forbidden",
                allowed_instance_families=["p4d"], required_labels=["team"])
    assert evaluate(ok, [Planned("big", A100x8, {"team": "ml"})], Usage(), None) == []


def test_quotas_count_what_is_in_use_but_not_the_cluster_replaced() -> None:
    policy = Policy(users={"alice": {"max_gpus": 20, "max_spend_per_day": 2000}},
                    teams={"ml": {"members": ["alice"], "allowed_clouds": ["gcp"]}})
    usage = Usage(clusters={"other": (8.0, 30.0), "big": (16.0, 65.0)})
    found = evaluate(policy, [Planned("big", A100x8)], usage, "alice")
    assert [(v.rule, v.cluster) for v in found] == [
        ("users.alice", None), ("users.alice", None), ("teams.ml", "big")]
    assert "24 GPUs in use with this plan (8 already)" in found[0].message
    assert "$2280.00/day" in found[1].message
    # The user from the task's labels wins over the environment's.
    assert evaluate(policy, [Planned("big", A100x8, {"user": "bob"})], usage, "alice") == []


def test_a_gpu_quota_counts_what_a_pipeline_holds_at_once() -> None:
    """Two steps that run one after another (16 GPUs, then 8): the quota counts the
    larger step, the GPUs held at the same time; without the plan's peak, both."""
    policy = Policy(users={"alice": {"max_gpus": 20}})
    small = A100x8.model_copy(update={"num_nodes": 1, "hourly_cost": 32.5})
    steps = [Planned("prep", A100x8), Planned("train", small)]
    assert evaluate(policy, steps, Usage(), "alice", at_once=[0], gpus_at_once=[0]) == []
    [over] = evaluate(policy, steps, Usage(), "alice")
    assert over.message.startswith("24 GPUs in use with this plan (0 already)")
    # 8 in use elsewhere, and the largest step is counted with them
    usage = Usage(clusters={"other": (8.0, 30.0)})
    [over] = evaluate(policy, steps, usage, "alice", at_once=[0], gpus_at_once=[0])
    assert over.message == ("24 GPUs in use with this plan at its peak (prep; the others "
                            "run before or after) (8 already) are over the 20 of users.alice")


def test_plan_json_names_the_steps_that_hold_the_most_accelerators(tmp_path: Path,
                                                                   home: Path) -> None:
    pipeline = tmp_path / "pipeline.yaml"
    pipeline.write_text(
        "name: prep\nresources:\n  accelerators: A100:8\n  infra: aws\nnum_nodes: 2\n"
        "run: p\n---\nname: train\nresources:\n  accelerators: A100:8\n  infra: aws\n"
        "run: t\n")
    (tmp_path / "quota.yaml").write_text("users:\n  alice: {max_gpus: 16}\n")
    r = skyc(home, "plan", str(pipeline), "--format", "json", "--no-diff",
             "--policy", str(tmp_path / "quota.yaml"), SKYC_USER="alice")
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    assert doc["peak_accelerator_tasks"] == [0] and doc["policy"]["ok"] is True
    (tmp_path / "quota.yaml").write_text("users:\n  alice: {max_gpus: 15}\n")
    r = skyc(home, "plan", str(pipeline), "--format", "json", "--no-diff",
             "--policy", str(tmp_path / "quota.yaml"), SKYC_USER="alice")
    assert r.returncode == 1
    [v] = json.loads(r.stdout)["policy"]["violations"]
    assert v["message"].startswith("16 GPUs in use with this plan at its peak (prep;")


def test_a_misspelt_key_names_the_file_and_the_key(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("max_hourly_cost_per_clutser: 3\n")
    with pytest.raises(ConfigError, match=r"p\.yaml: max_hourly_cost_per_clutser: Extra"):
        load_policy(path)


def _task(tmp_path: Path) -> str:
    (tmp_path / "t.yaml").write_text("name: tiny\nresources:\n  infra: local\nrun: 'true'\n")
    (tmp_path / "skyc-policy.yaml").write_text("allowed_clouds: [aws]\n")
    return str(tmp_path / "t.yaml")


@pytest.fixture()
def home(tmp_path: Path) -> Path:
    (tmp_path / "home").mkdir()
    return tmp_path / "home"


@requires_terraform
@pytest.mark.timeout(300)
def test_a_violation_in_every_format_and_its_exit_code(tmp_path: Path, home: Path) -> None:
    task = _task(tmp_path)
    r = skyc(home, "plan", task)
    assert r.returncode == 1, r.stderr
    assert "allowed_clouds: cluster tiny: local is not an allowed cloud (aws)" in r.stdout
    r = skyc(home, "plan", task, "--format", "json")
    assert r.returncode == 1
    policy = json.loads(r.stdout)["policy"]
    assert policy["ok"] is False and policy["file"].endswith("skyc-policy.yaml")
    assert policy["violations"] == [{"rule": "allowed_clouds", "cluster": "tiny",
                                     "message": "local is not an allowed cloud (aws)"}]
    r = skyc(home, "plan", task, "--format", "markdown")
    assert r.returncode == 1
    assert "- :x: `allowed_clouds`: cluster `tiny`: local is not an allowed cloud" in r.stdout
    # An explicit policy wins over the one beside the task.
    (tmp_path / "open.yaml").write_text("{}\n")
    r = skyc(home, "plan", task, "--policy", str(tmp_path / "open.yaml"),
             "--detailed-exitcode")
    assert r.returncode == 2, r.stderr   # passes the policy; the stack has changes
    assert "policy " in r.stdout and "passed" in r.stdout


@requires_terraform
@pytest.mark.timeout(300)
def test_apply_is_blocked_unless_allowed_and_then_recorded(tmp_path: Path, home: Path) -> None:
    task = _task(tmp_path)
    r = skyc(home, "apply", task, "--yes")
    assert r.returncode == 1 and "refused" in r.stderr and "Traceback" not in r.stderr
    assert not (home / ".skyc" / "clusters" / "tiny").exists()
    r = skyc(home, "apply", task, "--yes", "--allow-policy-violations")
    assert r.returncode == 0, r.stderr
    import sqlite3

    rows = sqlite3.connect(home / ".skyc" / "state.db").execute(
        "SELECT message FROM events WHERE kind = 'policy'").fetchall()
    assert rows and "local is not an allowed cloud" in rows[0][0]
    skyc(home, "destroy", "tiny", "--yes")


def test_validate_json_lists_invalid_files_with_their_problems(
    tmp_path: Path, home: Path
) -> None:
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text("name: ok\nrun: 'true'\n")
    bad.write_text("name: bad\nresourcez: {}\nrun: 'true'\n")
    r = skyc(home, "validate", str(good), str(bad), "--format", "json")
    assert r.returncode == 1
    first, second = json.loads(r.stdout)
    assert (first["path"], first["valid"], first["problems"]) == (str(good), True, [])
    assert (second["path"], second["valid"]) == (str(bad), False)
    [problem] = second["problems"]
    assert problem["path"] == "resourcez" and problem["severity"] == "error"
    assert problem["file"] == str(bad) and problem["line"] == 2


def test_a_failed_plan_prints_a_json_error_object(tmp_path: Path, home: Path) -> None:
    r = skyc(home, "plan", _task(tmp_path), "--format", "json", "--no-diff",
             "--policy", str(tmp_path / "missing.yaml"))
    assert r.returncode == 1
    doc = json.loads(r.stdout)
    assert doc["format_version"] == "1.1" and doc["error"]["type"] == "ConfigError"
    assert doc["document"] == "plan"
    assert "missing.yaml: cannot be read" in doc["error"]["message"]
    assert doc["error"]["exit_code"] == 1 and "missing.yaml" in r.stderr


def test_plan_json_has_cost_with_a_one_shot_total(tmp_path: Path, home: Path) -> None:
    (tmp_path / "open.yaml").write_text("{}\n")
    r = skyc(home, "plan", _task(tmp_path), "--format", "json", "--no-diff", "--hours", "3",
             "--policy", str(tmp_path / "open.yaml"))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["format_version"] == "2.4"
    assert doc["policy"]["ok"] is True and doc["policy"]["violations"] == []
    [c] = doc["cost"]["clusters"]
    assert c["cluster"] == "tiny" and c["before"] == {"hourly": 0.0, "monthly": 0.0}
    assert doc["cost"]["total"]["hours"] == 3 and doc["cost"]["hours_per_month"] == 730
