"""``skyc plan``'s per-stack engine diff, with the real terraform binary.

The ``local`` infra's stack uses only terraform's built-in ``terraform_data``
resource, so init needs no provider and these tests stay offline. Every call is
a real ``skyc`` subprocess with its own $SKYC_HOME.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.terraform import TERRAFORM_ENV, requires_terraform

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.timeout(300)


def skyc(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("AWS_", "GOOGLE_", "AZURE_", "KUBECONFIG", "SKYC_"))}
    base.update(HOME=str(home), SKYC_HOME=str(home / ".skyc"), PYTHONPATH=str(ROOT),
                COLUMNS="200", **TERRAFORM_ENV)
    base.update(env)
    return subprocess.run([sys.executable, "-m", "skyc", *args], capture_output=True,
                          text=True, env=base, timeout=240, cwd=ROOT)


def local_task(path: Path, num_nodes: int, name: str = "tiny") -> str:
    path.write_text(f"name: {name}\nnum_nodes: {num_nodes}\nresources:\n  infra: local\n"
                    'run: "true"\n')
    return str(path)


def plan_json(home: Path, task: str, *args: str, **env: str) -> dict[str, Any]:
    r = skyc(home, "plan", task, "--format", "json", *args, **env)
    assert r.returncode == 0, r.stderr
    doc: dict[str, Any] = json.loads(r.stdout)
    return doc


def actions(stack: dict[str, Any]) -> dict[str, list[str]]:
    return {rc["address"]: rc["actions"] for rc in stack["resource_changes"]}


@pytest.fixture()
def home(tmp_path: Path) -> Path:
    (tmp_path / "home").mkdir()
    return tmp_path / "home"


@requires_terraform
def test_new_cluster_then_applied_then_grown(tmp_path: Path, home: Path) -> None:
    two = local_task(tmp_path / "two.yaml", 2)

    # A new cluster: every resource is a create.
    doc = plan_json(home, two)
    [stack] = doc["stacks"]
    assert (stack["cluster"], stack["task"], stack["engine"], stack["status"]) == (
        "tiny", "tiny", "terraform", "ok")
    assert actions(stack) == {"terraform_data.node_0": ["create"],
                              "terraform_data.node_1": ["create"]}
    assert stack["summary"] == {"create": 2} and stack["has_changes"] is True
    assert doc["tasks"][0]["placement"]["cloud"] == "local"

    # Apply it for real, then the same plan has nothing to change.
    r = skyc(home, "apply", two, "--yes")
    assert r.returncode == 0, r.stdout + r.stderr
    [stack] = plan_json(home, two)["stacks"]
    assert actions(stack) == {"terraform_data.node_0": ["no-op"],
                              "terraform_data.node_1": ["no-op"]}
    assert stack["has_changes"] is False
    r = skyc(home, "plan", two)
    assert r.returncode == 0, r.stderr
    assert "stack tiny (terraform): no changes, 2 unchanged" in r.stdout

    # num_nodes 2 -> 3: exactly one instance to add.
    three = local_task(tmp_path / "three.yaml", 3)
    [stack] = plan_json(home, three)["stacks"]
    assert stack["summary"] == {"create": 1, "no-op": 2}
    assert actions(stack)["terraform_data.node_2"] == ["create"]
    r = skyc(home, "plan", three)
    assert r.returncode == 0, r.stderr
    assert "stack tiny (terraform): 1 to create, 2 unchanged" in r.stdout
    assert "+ terraform_data.node_2" in r.stdout
    assert "terraform_data.node_0" not in r.stdout  # unchanged resources are not listed

    # Planning changed nothing: the applied cluster still has two nodes.
    nodes = home / ".skyc" / "clusters" / "tiny" / "nodes"
    assert len([p for p in nodes.iterdir() if p.is_dir()]) == 2

    # -c names another (new) cluster: all creates again.
    [stack] = plan_json(home, three, "-c", "other")["stacks"]
    assert stack["cluster"] == "other" and stack["summary"] == {"create": 3}


@requires_terraform
def test_no_diff_skips_the_engine(tmp_path: Path, home: Path) -> None:
    task = local_task(tmp_path / "t.yaml", 1)
    doc = plan_json(home, task, "--no-diff")
    assert "stacks" not in doc
    assert doc["tasks"][0]["placement"]["cloud"] == "local"
    assert not (home / ".skyc" / "clusters").exists()


def test_missing_engine_still_prints_the_placement(tmp_path: Path, home: Path) -> None:
    task = local_task(tmp_path / "t.yaml", 2)
    missing = str(tmp_path / "no-such-terraform")
    r = skyc(home, "plan", task, "--format", "json", SKYC_TERRAFORM=missing)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    [stack] = doc["stacks"]
    assert stack["status"] == "unavailable" and stack["resource_changes"] == []
    assert "is not an executable" in stack["note"]
    assert "warning: no diff for stack tiny" in r.stderr and "--no-diff" in r.stderr
    assert doc["tasks"][0]["placement"]["cloud"] == "local"
    assert not (home / ".skyc" / "clusters").exists()  # nothing written without an engine

    r = skyc(home, "plan", task, SKYC_TERRAFORM=missing)
    assert r.returncode == 0, r.stderr
    assert "plan: tiny: local" in r.stdout and "warning: no diff for stack tiny" in r.stderr


@requires_terraform
def test_provider_init_failure_is_a_note(tmp_path: Path, home: Path) -> None:
    """An AWS stack with an empty provider mirror: init fails offline, plan still succeeds."""
    task = tmp_path / "gpu.yaml"
    task.write_text("name: gpu\nresources:\n  infra: aws/us-east-1\n  accelerators: T4:1\n"
                    "run: nvidia-smi\n")
    empty = tmp_path / "empty-mirror"
    empty.mkdir()
    r = skyc(home, "plan", str(task), "--format", "json", SKYC_TF_PLUGIN_DIR=str(empty),
             AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    [stack] = doc["stacks"]
    assert stack["status"] == "unavailable"
    assert "terraform init failed" in stack["note"]
    assert "SKYC_TF_PLUGIN_DIR" in stack["note"]  # the fix is named
    assert "\n" not in stack["note"]
    assert doc["tasks"][0]["placement"]["cloud"] == "aws"


def test_plan_without_credentials_runs_no_engine(tmp_path: Path, home: Path) -> None:
    """No AWS credentials here: the engine is not run at all (no init against the
    provider registry, no instance-metadata probe), the placement is still shown."""
    task = tmp_path / "gpu.yaml"
    task.write_text("name: gpu\nresources:\n  infra: aws/us-east-1\n  accelerators: T4:1\n"
                    "run: nvidia-smi\n")
    ran = tmp_path / "engine-ran"
    engine = tmp_path / "terraform"  # records any call; the real one would go online
    engine.write_text(f"#!/bin/sh\necho \"$@\" >> {ran}\nexit 1\n")
    engine.chmod(0o755)
    r = skyc(home, "plan", str(task), "--format", "json", SKYC_TERRAFORM=str(engine))
    assert r.returncode == 0, r.stderr
    [stack] = json.loads(r.stdout)["stacks"]
    assert stack["status"] == "unavailable" and stack["engine"] == "terraform"
    assert "no aws credentials found" in stack["note"] and "AWS_ACCESS_KEY_ID" in stack["note"]
    assert json.loads(r.stdout)["tasks"][0]["placement"]["cloud"] == "aws"
    assert not ran.exists(), ran.read_text()
    assert not (home / ".skyc" / "clusters").exists()
    table = skyc(home, "plan", str(task), SKYC_TERRAFORM=str(engine))
    assert table.returncode == 0 and "no aws credentials found" in table.stderr
    assert "plan: gpu: aws/us-east-1" in table.stdout and not ran.exists()


def test_cluster_option_needs_a_single_task(tmp_path: Path, home: Path) -> None:
    task = tmp_path / "pipe.yaml"
    task.write_text('name: a\nresources:\n  infra: local\nrun: "true"\n---\n'
                    'name: b\nresources:\n  infra: local\nrun: "true"\n')
    r = skyc(home, "plan", str(task), "-c", "one")
    assert r.returncode != 0
    assert "--cluster names one cluster" in r.stderr and "Traceback" not in r.stderr


def test_an_existing_cluster_is_diffed_where_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The diff is for the placement `skyc apply` would use: a cluster that is up
    stays in its region and zone even when the cheapest offer is now elsewhere."""
    from skyc.apply.infra import catalog_for
    from skyc.apply.stack_diffs import diff_placement as _diff_placement
    from skyc.optimizer import optimize
    from skyc.settings.config import SkycConfig
    from skyc.state.database import StateDB
    from skyc.task import load_tasks
    from tests.optimizer.helpers import SMALL_CATALOG

    monkeypatch.setenv("SKYC_HOME", str(tmp_path / "home"))
    path = tmp_path / "t.yaml"
    path.write_text("name: train\nresources:\n  accelerators: A100:8\nrun: echo\n")
    [task] = load_tasks(path).tasks
    config = SkycConfig()
    catalog = catalog_for(config, [task], infra="aws", catalog_dir=SMALL_CATALOG)
    best = optimize([task], catalog, infra="aws").tasks[0]
    other = next(a for a in best.alternatives if a.region != best.placement.region)

    # No state yet: the plan's own placement.
    assert _diff_placement(task, best.placement, "train", SMALL_CATALOG, "cost",
                           config) == (best.placement, None)

    (tmp_path / "home").mkdir()
    with StateDB() as db:
        record = db.upsert_cluster_from_placement("train", other, status="UP")
        db.upsert_cluster(record.model_copy(update={"launched_at": 1.0}))  # it has been up
    placement, note = _diff_placement(task, best.placement, "train", SMALL_CATALOG,
                                      "cost", config)
    assert (placement.cloud, placement.region, placement.zone) == (
        other.cloud, other.region, other.zone)
    assert note is not None and f"lives in aws/{other.region}" in note
    # Another cluster name has no record: unaffected.
    assert _diff_placement(task, best.placement, "fresh", SMALL_CATALOG, "cost",
                           config) == (best.placement, None)
