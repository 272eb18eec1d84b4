"""JSON Schema of a task file, from the models (for yaml-language-server).

An editor applies the schema to every document of a file, so a document is
either a task or a pipeline's header. The task's properties are repeated at
the top level so that editors complete them.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from skyc.task.resources import Autostop, JobRecovery
from skyc.task.spec import JobGroupHeader, Task

SCHEMA_ID = "https://skyc.dev/schemas/task.json"
# Fields whose short forms replace their schema name these models by "x-skyc-model".
_INLINE: dict[str, type[BaseModel]] = {"JobRecovery": JobRecovery, "Autostop": Autostop}


def _inline(node: Any) -> Any:
    if isinstance(node, dict):
        name = node.get("x-skyc-model")
        if isinstance(name, str):
            schema = _INLINE[name].model_json_schema(mode="validation")
            schema.pop("title", None)
            return schema
        return {k: _inline(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_inline(v) for v in node]
    return node


def task_json_schema() -> dict[str, Any]:
    """The schema of one document of a task file (JSON Schema draft 2020-12)."""
    task = _inline(Task.model_json_schema(mode="validation"))
    header = _inline(JobGroupHeader.model_json_schema(mode="validation"))
    defs: dict[str, Any] = {**task.pop("$defs", {}), **header.pop("$defs", {})}
    defs["Task"] = task
    defs["JobGroupHeader"] = header
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "skyc task file (SkyPilot task YAML)",
        "type": "object",
        "properties": task["properties"],
        "anyOf": [{"$ref": "#/$defs/Task"}, {"$ref": "#/$defs/JobGroupHeader"}],
        "$defs": defs,
    }
