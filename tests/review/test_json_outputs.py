"""``--format json`` of queue and check: versioned objects (real skyc subprocesses;
queue after a real apply on ``local`` with terraform)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.plan_diff.test_plan_diff import local_task, skyc
from tests.support.terraform import requires_terraform


@pytest.fixture()
def home(tmp_path: Path) -> Path:
    (tmp_path / "home").mkdir()
    return tmp_path / "home"


def test_check_json(home: Path) -> None:
    r = skyc(home, "check", "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["format_version"] == "1.1"
    local = next(i for i in doc["infra"] if i["name"] == "local")
    assert set(local) == {"name", "enabled", "reason", "details", "credentials"}
    assert local["credentials"] is None  # local needs none
    assert skyc(home, "check", "--format", "yaml").returncode != 0


@requires_terraform
@pytest.mark.timeout(300)
def test_queue_json(tmp_path: Path, home: Path) -> None:
    r = skyc(home, "queue", "--format", "json")
    assert r.returncode == 0 and json.loads(r.stdout) == {"format_version": "2.1", "jobs": []}
    assert skyc(home, "apply", local_task(tmp_path / "t.yaml", 1), "--yes").returncode == 0
    r = skyc(home, "queue", "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    [job] = doc["jobs"]
    assert (job["cluster"], job["id"], job["name"], job["status"]) == (
        "tiny", 1, "tiny", "SUCCEEDED")
    assert skyc(home, "destroy", "tiny", "--yes").returncode == 0


@requires_terraform
@pytest.mark.timeout(300)
def test_several_tasks_make_one_report(tmp_path: Path, home: Path) -> None:
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    local_task(tasks / "a.yaml", 1, name="alpha")
    local_task(tasks / "b.yaml", 2, name="beta")
    (tasks / "skyc-policy.yaml").write_text("allowed_clouds: [local]\n")
    r = skyc(home, "plan", str(tasks), "--format", "markdown")
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("<!-- skyc-plan:") == 1
    assert "| `alpha` |" in r.stdout and "| `beta` |" in r.stdout
    assert "**skyc plan**: 3 to add" in r.stdout and "): passed" in r.stdout
    r2 = skyc(home, "plan", str(tasks / "a.yaml"), str(tasks / "b.yaml"), "--format", "json")
    assert r2.returncode == 0, r2.stderr
    doc = json.loads(r2.stdout)
    assert [s["cluster"] for s in doc["stacks"]] == ["alpha", "beta"]
    assert [c["cluster"] for c in doc["cost"]["clusters"]] == ["alpha", "beta"]
