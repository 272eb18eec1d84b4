"""``skyc schema [KIND]`` as a user runs it (real subprocesses): the kinds and their
versions, each kind's JSON Schema (draft 2020-12), a misspelt kind refused."""

from __future__ import annotations

import json
from typing import Any

import pytest

from skyc.schemas import KINDS, versions
from skyc.task.schema import task_json_schema
from tests.e2e.conftest import (
    Skyc,
    skyc,  # noqa: F401 - the fixture these tests use
)

jsonschema = pytest.importorskip("jsonschema")
DOCUMENTS = {"plan": versions.PLAN, "status": versions.STATUS, "queue": versions.QUEUE,
             "jobs": versions.JOBS, "storage": versions.STORAGE, "error": versions.ERROR}


def test_without_a_kind_it_lists_every_kind_and_its_version(skyc: Skyc) -> None:  # noqa: F811
    out = skyc.ok("schema")
    listed = {line.split()[0]: line.split()[1] for line in out.stdout.splitlines()}
    assert listed == {"task": "-", **DOCUMENTS}
    assert listed["queue"] == "2.1" and listed["error"] == "1.1"


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_each_kind_prints_a_draft_2020_12_schema(skyc: Skyc, kind: str) -> None:  # noqa: F811
    schema: dict[str, Any] = json.loads(skyc.ok("schema", kind).stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == f"https://skyc.dev/schemas/{kind}.json"
    if kind == "task":
        assert schema == task_json_schema()
        return
    version = schema["properties"]["format_version"]
    assert version["const"] == DOCUMENTS[kind]
    assert "format_version" in schema["required"]
    assert DOCUMENTS[kind] in schema["title"]


def test_a_misspelt_kind_is_refused_with_the_nearest_one(skyc: Skyc) -> None:  # noqa: F811
    out = skyc("schema", "plna")
    assert out.returncode == 1 and out.stdout == ""
    assert "no document kind 'plna'" in out.stderr
    assert "did you mean 'plan'?" in out.stderr and "Traceback" not in out.stderr
    far = skyc("schema", "nothing-like-it")
    assert far.returncode == 1 and "did you mean" not in far.stderr
    assert "kinds: task, plan, status, queue, jobs, storage, error" in far.stderr


def test_the_schemas_type_what_the_documents_changed() -> None:
    """The fields this version types: a queue job's integer id and node count, the
    cost units of plan and status, the failed document's kind in an error."""
    from skyc.schemas import json_schema

    job = json_schema("queue")["$defs"]["ClusterJob"]["properties"]
    assert job["id"]["type"] == "integer" and job["nodes"]["type"] == "integer"
    placement = json_schema("plan")["$defs"]["PricedPlacement"]["properties"]
    assert {"hourly_cost", "hourly_cost_total", "hourly_cost_per_node"} <= set(placement)
    cluster = json_schema("status")["$defs"]["ClusterStatus"]
    assert {"hourly_cost_total", "hourly_cost_per_node"} <= set(cluster["required"])
    error = json_schema("error")
    assert error["properties"]["document"]["enum"] == ["plan", "status", "queue", "jobs"]
