"""``skyc.plan_with_diff`` and ``skyc.apply_saved_plan`` called as a library user calls
them: in this process, on the ``local`` infra, with the real terraform binary (its
built-in ``terraform_data`` resource: no provider, offline)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import skyc
from skyc.apply.plan_diff import PlanProgress
from skyc.errors import ConfigError, StalePlan, StateError
from tests.plan_diff.test_plan_diff import local_task
from tests.review.test_reviewed_apply import Quiet, engine_runs, tree_digest
from tests.support.terraform import requires_terraform

pytestmark = pytest.mark.timeout(300)


class Heard(PlanProgress):
    """Keeps what plan_with_diff says, in order (``skyc.PlanProgress``)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []

    def warning(self, text: str) -> None:
        self.events.append(("warning", text))

    def placed(self, placed: Any) -> None:
        self.events.append(("placed", placed.plan.tasks[0].placement.cloud))

    def diff_started(self, clusters: list[str]) -> None:
        self.events.append(("diff_started", clusters))

    def stack(self, cluster: str, engine: str) -> None:
        self.events.append(("stack", (cluster, engine)))

    def diff_done(self, stacks: list[dict[str, Any]]) -> None:
        self.events.append(("diff_done", [st["status"] for st in stacks]))


@pytest.fixture()
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SKYC_HOME", str(tmp_path / "skyc-home"))
    return tmp_path / "skyc-home"


def actions(stack: dict[str, Any]) -> dict[str, list[str]]:
    return {rc["address"]: rc["actions"] for rc in stack["resource_changes"]}


def secret_task(path: Path) -> Path:
    """Two local nodes whose job succeeds only when it is given the secret."""
    path.write_text("name: tiny\nnum_nodes: 2\nresources:\n  infra: local\n"
                    "secrets:\n  TOKEN: null\nrun: 'test -n \"$TOKEN\"'\n")
    return path


@requires_terraform
def test_plan_save_apply_then_plan_again(tmp_path: Path, home: Path) -> None:
    task = secret_task(tmp_path / "t.yaml")
    out = tmp_path / "plan.skyc"
    heard = Heard()
    before = tree_digest(home)
    result = skyc.plan_with_diff(
        [task], skyc.PlanDiffOptions(out=out, detailed_exitcode=True,
                                     secrets={"TOKEN": "s3cret"}), heard)

    # A new cluster: its engine diff creates every node, and planning wrote nothing
    # but the plan file.
    assert result.clusters == ["tiny"] and result.plan.tasks[0].placement.cloud == "local"
    [stack] = result.stacks or []
    assert (stack["cluster"], stack["engine"], stack["status"]) == ("tiny", "terraform", "ok")
    assert actions(stack) == {"terraform_data.node_0": ["create"],
                              "terraform_data.node_1": ["create"]}
    assert stack["has_changes"] is True and result.exit_code == 2 and result.unknown == []
    assert result.policy is None and result.saved == out
    assert tree_digest(home) == before
    assert heard.events == [("placed", "local"), ("diff_started", ["tiny"]),
                            ("stack", ("tiny", "terraform")), ("diff_done", ["ok"])]
    doc = result.document()
    assert doc["stacks"] == result.stacks and doc["tasks"][0]["placement"]["num_nodes"] == 2
    assert doc["cost"]["clusters"][0]["cluster"] == "tiny"
    saved = json.loads(out.read_text())
    assert saved["stacks"][0]["changes"] == [["terraform_data.node_0", "create"],
                                             ["terraform_data.node_1", "create"]]
    assert "s3cret" not in out.read_text()

    # The saved plan applied: the cluster is up and its job ran with the secret.
    launched = skyc.apply_saved_plan(out, secrets={"TOKEN": "s3cret"}, reporter=Quiet())
    assert (launched.cluster, launched.exit_code) == ("tiny", 0), launched.failure
    workspace = home / "clusters" / "tiny"
    assert sorted(p.name for p in (workspace / "nodes").iterdir()) == ["head", "worker1"]
    assert (engine_runs(workspace, "plan"), engine_runs(workspace, "apply")) == (1, 1)

    # The same task planned again: nothing to change (exit 0 as terraform's).
    again = skyc.plan_with_diff([task], skyc.PlanDiffOptions(
        detailed_exitcode=True, secrets={"TOKEN": "s3cret"}))
    [stack] = again.stacks or []
    assert actions(stack) == {"terraform_data.node_0": ["no-op"],
                              "terraform_data.node_1": ["no-op"]}
    assert stack["has_changes"] is False and again.exit_code == 0 and again.saved is None

    # The first plan is stale now (the cluster it was made against changed): refused
    # before the engine runs.
    with pytest.raises(StalePlan, match="cluster tiny changed since the plan"):
        skyc.apply_saved_plan(out, secrets={"TOKEN": "s3cret"})
    assert engine_runs(workspace, "plan") == 2  # the second plan_with_diff's, no other


def test_placement_only_with_the_policy_and_the_task_warnings(tmp_path: Path,
                                                              home: Path) -> None:
    task = secret_task(tmp_path / "t.yaml")
    (tmp_path / "skyc-policy.yaml").write_text("allowed_clouds: [aws]\n")
    heard = Heard()
    result = skyc.plan_with_diff([str(task)], skyc.PlanDiffOptions(diff=False), heard)
    assert result.stacks is None and result.plan.tasks[0].placement.cloud == "local"
    assert [kind for kind, _ in heard.events] == ["warning", "placed"]  # no engine ran
    assert "TOKEN" in heard.events[0][1]
    policy = result.policy
    assert policy is not None and policy["ok"] is False
    assert policy["file"] == str(tmp_path / "skyc-policy.yaml")
    assert policy["violations"] == [{"rule": "allowed_clouds", "cluster": "tiny",
                                     "message": "local is not an allowed cloud (aws)"}]
    assert result.exit_code == 1  # a violation, whatever the diff says
    assert result.document()["policy"] == policy
    assert not home.exists()

    # An open policy, named: it passes; a new cluster is a change.
    (tmp_path / "open.yaml").write_text("{}\n")
    passed = skyc.plan_with_diff([task], skyc.PlanDiffOptions(
        diff=False, detailed_exitcode=True, policy_file=tmp_path / "open.yaml"))
    assert passed.policy is not None and passed.policy["ok"] is True
    assert passed.exit_code == 2 and passed.unknown == []

    with pytest.raises(ConfigError, match="--cluster names the cluster to diff against"):
        skyc.plan_with_diff([task], skyc.PlanDiffOptions(diff=False, cluster="other"))


def test_a_plan_file_changed_or_made_without_a_diff_is_refused(tmp_path: Path,
                                                               home: Path) -> None:
    """Saved without the engine diff (no engine runs here): applying it is refused, as
    is one edited by hand or whose task file changed; nothing is created."""
    task = Path(local_task(tmp_path / "t.yaml", 1))
    out = tmp_path / "plan.skyc"
    result = skyc.plan_with_diff(task, skyc.PlanDiffOptions(diff=False, out=out))  # one path
    assert result.saved == out and json.loads(out.read_text())["stacks"][0]["changes"] is None

    with pytest.raises(StateError, match="holds no engine diff for stack tiny"):
        skyc.apply_saved_plan(out)

    edited = json.loads(out.read_text())
    edited["stacks"][0]["files"]["main.tf.json"] = "{}"
    tampered = tmp_path / "tampered.skyc"
    tampered.write_text(json.dumps(edited))
    with pytest.raises(ConfigError, match="stack tiny's files do not match its digest"):
        skyc.apply_saved_plan(tampered)

    local_task(tmp_path / "t.yaml", 2)
    with pytest.raises(StateError, match=f"task file {task} changed"):
        skyc.apply_saved_plan(out)
    assert not (home / "clusters").exists()
