"""The JSON Schema from ``skyc schema`` accepts what the loader accepts (as an
editor such as yaml-language-server would apply it, document by document)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from skyc.task.schema import task_json_schema
from tests.task.fixtures import FIXTURES, VALID

jsonschema = pytest.importorskip("jsonschema")
EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.yaml"))


@pytest.fixture(scope="module")
def validator() -> Any:
    schema = task_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("path", VALID + EXAMPLES, ids=lambda p: p.stem)
def test_schema_accepts_valid_files(validator: Any, path: Path) -> None:
    for doc in yaml.safe_load_all(path.read_text()):
        assert [e.message for e in validator.iter_errors(doc)] == []


@pytest.mark.parametrize("name", [
    "misspelt-keys", "bad-values", "bad-envs", "bad-file-mounts", "top-level-not-string",
    "misplaced-resource-key", "nested-any-of",
])
def test_schema_rejects_invalid_files(validator: Any, name: str) -> None:
    docs = list(yaml.safe_load_all((FIXTURES / "invalid" / f"{name}.yaml").read_text()))
    assert any(list(validator.iter_errors(doc)) for doc in docs)
