"""Every JSON document skyc prints validates against ``skyc schema KIND`` (with the
``jsonschema`` package, draft 2020-12) and against its pydantic model: real commands
in one home on the ``local`` infra (a launched two-node cluster, a finished managed
job), so each document holds real values, not an empty list."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from tests.e2e.conftest import _CREDENTIAL_VARS, REPO, Skyc, wait_until
from tests.jobs.conftest import stop_controllers
from tests.support.terraform import requires_terraform

jsonschema = pytest.importorskip("jsonschema")
pytestmark = [requires_terraform, pytest.mark.timeout(300)]
GPU_TASK = "name: train\nresources:\n  accelerators: A100:8\nnum_nodes: 2\nrun: python t.py\n"
LOCAL_TASK = "name: tiny\nnum_nodes: 2\nresources:\n  infra: local\nrun: echo hi\n"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Skyc]:
    """A home with cluster ``tiny`` (local, two nodes, one job) and one managed job
    that has succeeded."""
    root = tmp_path_factory.mktemp("documents")
    (root / "project").mkdir()
    (root / "user").mkdir()
    env = {k: v for k, v in os.environ.items() if k not in _CREDENTIAL_VARS}
    env.update({"SKYC_HOME": str(root / "home"), "PYTHONPATH": str(REPO),
                "HOME": str(root / "user"), "AWS_SHARED_CREDENTIALS_FILE": str(root / "none"),
                "AWS_CONFIG_FILE": str(root / "none"), "NO_COLOR": "1", "COLUMNS": "200",
                "SKYC_JOBS_POLL_S": "0.3", "SKYC_JOBS_IDLE_S": "5"})
    runner = Skyc(root / "project", root / "home", env)
    runner.write("gpu.yaml", GPU_TASK)
    runner.write("tiny.yaml", LOCAL_TASK)
    runner.write("policy.yaml", "allowed_clouds: [local]\n")
    try:
        runner.ok("launch", "tiny.yaml", "-y")
        runner.ok("jobs", "launch", "--infra", "local", "echo managed", "-y", "-d")
        assert wait_until(lambda: _jobs(runner)[0]["status"] == "SUCCEEDED", timeout=60)
        yield runner
    finally:
        stop_controllers(runner.home)
        runner("down", "tiny", "-y")


def _jobs(runner: Skyc) -> list[dict[str, Any]]:
    doc: list[dict[str, Any]] = json.loads(runner.ok("jobs", "queue", "--format", "json")
                                           .stdout)["jobs"]
    return doc


@pytest.fixture(scope="module")
def schemas(world: Skyc) -> dict[str, Any]:
    """``skyc schema KIND`` of each document kind, as printed."""
    kinds = ("plan", "status", "queue", "jobs", "error")
    return {k: json.loads(world.ok("schema", k).stdout) for k in kinds}


def _model(kind: str) -> type[BaseModel]:
    from skyc.schemas.error import ErrorDocument
    from skyc.schemas.jobs import JobsDocument
    from skyc.schemas.plan import PlanDocument
    from skyc.schemas.queue import QueueDocument
    from skyc.schemas.status import StatusDocument

    models: dict[str, type[BaseModel]] = {
        "plan": PlanDocument, "status": StatusDocument, "queue": QueueDocument,
        "jobs": JobsDocument, "error": ErrorDocument}
    return models[kind]


def check(schemas: dict[str, Any], kind: str, doc: Any) -> dict[str, Any]:
    """``doc`` is a valid document of ``kind``: by the printed schema and the model."""
    validator = jsonschema.Draft202012Validator(schemas[kind])
    problems = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
                for e in validator.iter_errors(doc)]
    assert problems == [], json.dumps(doc, indent=1)[:3000]
    _model(kind).model_validate(doc)
    assert isinstance(doc, dict)
    return doc


def _json(world: Skyc, *args: str, code: int = 0) -> Any:
    out = world(*args)
    assert out.returncode == code, str(out)
    return json.loads(out.stdout)


def test_plan_documents(world: Skyc, schemas: dict[str, Any]) -> None:
    """A plan over the plan-only clouds (notes, run cost, cost), and one of the local
    cluster with its engine diff and a policy."""
    doc = check(schemas, "plan", _json(world, "plan", "gpu.yaml", "--format", "json",
                                       "--no-diff", "--hours", "2"))
    assert doc["notes"]["plan_only"] and doc["cost"]["total"]["hours"] == 2
    placement = doc["tasks"][0]["placement"]
    assert placement["hourly_cost_per_node"] == round(placement["hourly_cost"] / 2, 6)
    diffed = check(schemas, "plan", _json(world, "plan", "tiny.yaml", "--format", "json",
                                          "--policy", "policy.yaml"))
    [stack] = diffed["stacks"]
    assert stack["cluster"] == "tiny" and stack["status"] == "ok"
    assert diffed["policy"]["ok"] is True


def test_status_documents(world: Skyc, schemas: dict[str, Any]) -> None:
    doc = check(schemas, "status", _json(world, "status", "--format", "json"))
    [cluster] = doc["clusters"]
    assert cluster["hourly_cost_total"] == cluster["hourly_cost"]
    assert cluster["hourly_cost_per_node"] == round(cluster["hourly_cost"] / 2, 6)
    verbose = check(schemas, "status", _json(world, "status", "-v", "--format", "json"))
    assert verbose["clusters"][0]["events"]


def test_queue_document_types_ids_and_nodes(world: Skyc, schemas: dict[str, Any]) -> None:
    doc = check(schemas, "queue", _json(world, "queue", "--format", "json"))
    [job] = doc["jobs"]
    assert (job["cluster"], job["id"], job["name"], job["status"]) == (
        "tiny", 1, "tiny", "SUCCEEDED")
    assert job["nodes"] == 2 and isinstance(job["submitted_at"], float)
    assert job["node_statuses"] == [{"node": "head", "status": "SUCCEEDED"},
                                    {"node": "worker1", "status": "SUCCEEDED"}]


def test_jobs_document(world: Skyc, schemas: dict[str, Any]) -> None:
    doc = check(schemas, "jobs", _json(world, "jobs", "queue", "--format", "json"))
    [job] = doc["jobs"]
    assert job["status"] == "SUCCEEDED" and job["attempts"] and job["trail"]


@pytest.mark.parametrize(("args", "document"), [
    (("plan", "tiny.yaml", "--format", "json", "--no-diff", "--policy", "missing.yaml"),
     "plan"),
    (("status", "nope", "--format", "json"), "status"),
    (("queue", "nope", "--format", "json"), "queue"),
    (("jobs", "queue", "--format", "json"), "jobs"),
], ids=["plan", "status", "queue", "jobs"])
def test_error_documents_name_the_document_that_failed(
    world: Skyc, schemas: dict[str, Any], args: tuple[str, ...], document: str,
) -> None:
    env = dict(world.env)
    if document == "jobs":  # a config that cannot be read: the jobs queue fails
        home = world.home.parent / "broken-home"
        home.mkdir(exist_ok=True)
        (home / "config.yaml").write_text("jobs: [\n")
        world.env["SKYC_HOME"] = str(home)
    try:
        doc = check(schemas, "error", _json(world, *args, code=1))
    finally:
        world.env.clear()
        world.env.update(env)
    assert doc["document"] == document and doc["error"]["exit_code"] == 1
    assert doc["error"]["message"]


def test_compiled_plan_json_is_a_plan_document(tmp_path: Path, schemas: dict[str, Any]
                                               ) -> None:
    """What compile writes as plan.json (:func:`compiled_plan_json`), from a real plan."""
    from skyc.apply.plan_document import compiled_plan_json
    from skyc.catalog import load_catalog
    from skyc.optimizer import optimize
    from skyc.task import load_tasks

    path = tmp_path / "gpu.yaml"
    path.write_text(GPU_TASK)
    plan = optimize(list(load_tasks(path).tasks), load_catalog())
    stacks = [{"cluster": "train", "task": "train", "path": "train/__main__.py",
               "engine": "pulumi"}]
    doc = check(schemas, "plan", json.loads(compiled_plan_json(plan, stacks)))
    placement = doc["tasks"][0]["placement"]
    assert placement["hourly_cost_total"] == placement["hourly_cost"]
    assert placement["hourly_cost_per_node"] == round(placement["hourly_cost"] / 2, 6)


def test_compile_writes_a_plan_document(world: Skyc, schemas: dict[str, Any]) -> None:
    world.ok("compile", "gpu.yaml", "-o", "out")
    check(schemas, "plan", json.loads((world.cwd / "out" / "plan.json").read_text()))
