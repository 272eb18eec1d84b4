"""Saved plan files end to end on ``local``: ``skyc plan -o`` then ``skyc apply FILE``,
real terraform and real ``skyc`` subprocesses with their own $SKYC_HOME."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.plan_diff.test_plan_diff import local_task, skyc
from tests.review.test_reviewed_apply import engine_runs, tree_digest
from tests.support.terraform import requires_terraform

pytestmark = [pytest.mark.timeout(300), requires_terraform]


@pytest.fixture()
def home(tmp_path: Path) -> Path:
    (tmp_path / "home").mkdir()
    return tmp_path / "home"


def save(home: Path, task: str, out: Path, *args: str) -> dict[str, object]:
    before = tree_digest(home / ".skyc")
    r = skyc(home, "plan", task, "-o", str(out), *args)
    assert r.returncode == 0, r.stderr
    assert tree_digest(home / ".skyc") == before   # plan -o writes only the plan file
    doc: dict[str, object] = json.loads(out.read_text())
    return doc


def test_saved_plan_applies_without_asking(tmp_path: Path, home: Path) -> None:
    task = tmp_path / "t.yaml"
    task.write_text("name: tiny\nnum_nodes: 2\nresources:\n  infra: local\n"
                    "secrets:\n  TOKEN: null\nrun: 'test -n \"$TOKEN\"'\n")
    out = tmp_path / "plan.skyc"
    doc = save(home, str(task), out, "--secret", "TOKEN=s3cret")  # given, never stored
    assert doc["format"] == "skyc-plan" and doc["format_version"] == "1.0"
    [st] = doc["stacks"]  # type: ignore[misc]
    assert st["changes"] == [["terraform_data.node_0", "create"],
                             ["terraform_data.node_1", "create"]]
    assert st["engine_plan"]  # terraform's saved plan, base64
    [t] = doc["tasks"]  # type: ignore[misc]
    assert t["secrets_to_supply"] == ["TOKEN"] and t["task"]["secrets"] == {"TOKEN": None}
    assert "s3cret" not in out.read_text()
    assert (out.stat().st_mode & 0o777) == 0o600

    # Not a terminal, no --yes: a plan file is applied without asking.
    r = skyc(home, "apply", str(out), "--secret", "TOKEN=s3cret")
    assert r.returncode == 0, r.stdout + r.stderr
    workspace = home / ".skyc" / "clusters" / "tiny"
    assert (engine_runs(workspace, "plan"), engine_runs(workspace, "apply")) == (1, 1)

    # The same plan file again: the cluster moved since (it was applied).
    r = skyc(home, "apply", str(out), "--secret", "TOKEN=s3cret")
    assert r.returncode == 1
    assert "stale" in r.stderr and "cluster tiny changed since the plan" in r.stderr
    assert "Traceback" not in r.stderr
    assert engine_runs(workspace, "plan") == 1   # refused before any engine run


def test_a_changed_task_file_is_refused(tmp_path: Path, home: Path) -> None:
    task = local_task(tmp_path / "t.yaml", 1)
    out = tmp_path / "plan.skyc"
    save(home, task, out)
    local_task(tmp_path / "t.yaml", 2)
    r = skyc(home, "apply", str(out))
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"task file {tmp_path / 't.yaml'} changed" in r.stderr
    assert not (home / ".skyc" / "clusters" / "tiny").exists()


def test_a_plan_file_edited_by_hand_is_refused(tmp_path: Path, home: Path) -> None:
    out = tmp_path / "plan.skyc"
    doc = save(home, local_task(tmp_path / "t.yaml", 1), out)
    doc["surprise"] = 1
    out.write_text(json.dumps(doc))
    r = skyc(home, "apply", str(out))
    assert r.returncode == 1 and "surprise" in r.stderr and "Traceback" not in r.stderr


def test_a_plan_of_an_existing_cluster_applies_its_saved_engine_plan(
    tmp_path: Path, home: Path
) -> None:
    task = local_task(tmp_path / "t.yaml", 1)
    assert skyc(home, "apply", task, "--yes").returncode == 0
    workspace = home / ".skyc" / "clusters" / "tiny"
    local_task(tmp_path / "t.yaml", 2)
    out = tmp_path / "plan.skyc"
    r = skyc(home, "plan", task, "-o", str(out))
    assert r.returncode == 0, r.stderr
    [st] = json.loads(out.read_text())["stacks"]
    assert st["changes"] == [["terraform_data.node_1", "create"]]
    plans = engine_runs(workspace, "plan")          # the first apply's and plan -o's
    r = skyc(home, "apply", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    # The saved engine plan was applied as it is: no plan ran at apply.
    assert (engine_runs(workspace, "plan"), engine_runs(workspace, "apply")) == (plans, 2)
    assert (workspace / "nodes" / "worker1").is_dir()
    assert skyc(home, "destroy", "tiny", "--yes").returncode == 0


def test_a_plan_made_in_one_checkout_applies_from_another(tmp_path: Path, home: Path) -> None:
    """A laptop plans, CI applies from its own clone: task files are recorded relative to
    the plan file, and their digests (not their places) are checked."""
    import shutil

    laptop, ci = tmp_path / "laptop", tmp_path / "ci"
    (laptop / "tasks").mkdir(parents=True)
    task = local_task(laptop / "tasks" / "t.yaml", 1)
    doc = save(home, task, laptop / "plan.skyc")
    assert doc["inputs"]["task_files"] == {  # type: ignore[index]
        "tasks/t.yaml": doc["inputs"]["task_files"]["tasks/t.yaml"]}  # type: ignore[index]
    assert [t["file"] for t in doc["tasks"]] == ["tasks/t.yaml"]  # type: ignore[index, union-attr]
    shutil.copytree(laptop, ci)
    shutil.rmtree(laptop)
    r = skyc(home, "apply", str(ci / "plan.skyc"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert skyc(home, "down", "tiny", "--yes").returncode == 0
