"""Fixture files for the task loader: inputs and their expected outputs.

``SKYC_REGEN=1 python -m pytest tests/task`` rewrites the expected files from
the current output (review the diff before keeping it).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from skyc.errors import TaskSpecError
from skyc.task import TaskFile, load_tasks

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "task"
VALID = sorted((FIXTURES / "valid").glob("*.yaml"))
INVALID = sorted((FIXTURES / "invalid").glob("*.yaml"))
REGEN = os.environ.get("SKYC_REGEN") == "1"


def flags_of(path: Path) -> tuple[dict[str, str], dict[str, str | None]]:
    """``# env: K=V`` and ``# secret: K=V`` comment lines at the top of a fixture."""
    env: dict[str, str] = {}
    secrets: dict[str, str | None] = {}
    for line in path.read_text().splitlines():
        for prefix, target in (("# env: ", env), ("# secret: ", secrets)):
            if line.startswith(prefix):
                key, _, value = line[len(prefix):].partition("=")
                target[key] = value
    return env, secrets


def load_fixture(path: Path) -> TaskFile:
    env, secrets = flags_of(path)
    return load_tasks(path, env=env, secrets=secrets)


def normalized(task_file: TaskFile) -> dict[str, Any]:
    """What a valid fixture's ``.expected.json`` holds."""
    name = task_file.path.name
    return {
        "header": task_file.header.dump() if task_file.header else None,
        "tasks": [t.dump() for t in task_file.tasks],
        "candidates": [
            [c.model_dump(mode="json") for c in t.candidates()] for t in task_file.tasks
        ],
        "warnings": [w.render().replace(str(task_file.path), name) for w in task_file.warnings],
    }


def error_text(path: Path) -> str:
    """What an invalid fixture's ``.expected.txt`` holds: every problem, one a line."""
    try:
        load_fixture(path)
    except TaskSpecError as exc:
        return "\n".join(p.render().replace(str(path), path.name) for p in exc.problems) + "\n"
    raise AssertionError(f"{path.name} loaded without error")


def check_expected(expected: Path, actual: str) -> None:
    if REGEN or not expected.exists():
        expected.write_text(actual)
        if not REGEN:
            raise AssertionError(f"{expected.name} was missing and has been written; review it")
    assert actual == expected.read_text()


def as_json(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=True) + "\n"
