"""The JSON documents skyc prints, one versioned schema per kind.

Each kind has a pydantic model (``skyc.schemas.<kind>``) whose JSON Schema (draft
2020-12) ``skyc schema KIND`` prints, and a ``format_version``
(:mod:`skyc.schemas.versions`). ``task`` is the task file's schema
(:mod:`skyc.task.schema`); task files carry no version.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, NamedTuple

from skyc.schemas import versions

if TYPE_CHECKING:
    from skyc.errors import ConfigError


class Kind(NamedTuple):
    version: str | None       # None: the document carries no format_version
    printed_by: str
    model: str                # "module:Model" under skyc.schemas


KINDS: dict[str, Kind] = {
    "task": Kind(None, "task files (SkyPilot task YAML), as skyc reads them", ""),
    "plan": Kind(versions.PLAN, "skyc plan --format json; skyc compile's plan.json",
                 "plan:PlanDocument"),
    "status": Kind(versions.STATUS, "skyc status --format json", "status:StatusDocument"),
    "queue": Kind(versions.QUEUE, "skyc queue --format json", "queue:QueueDocument"),
    "jobs": Kind(versions.JOBS, "skyc jobs queue --format json", "jobs:JobsDocument"),
    "storage": Kind(versions.STORAGE, "skyc storage ls --format json",
                    "storage:StorageDocument"),
    "error": Kind(versions.ERROR, "a --format json command that fails, on stdout",
                  "error:ErrorDocument"),
}


def unknown_kind(kind: str) -> ConfigError:
    """The error for a kind skyc has no schema of, with the nearest name."""
    import difflib

    from skyc.errors import ConfigError

    near = difflib.get_close_matches(kind.lower(), list(KINDS), n=1, cutoff=0.5)
    guess = f"did you mean '{near[0]}'? " if near else ""
    return ConfigError(f"no document kind '{kind}'",
                       hint=f"{guess}kinds: {', '.join(KINDS)} (`skyc schema` lists them)")


def json_schema(kind: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the documents of ``kind``."""
    found = KINDS.get(kind)
    if found is None:
        raise unknown_kind(kind)
    if kind == "task":
        from skyc.task.schema import task_json_schema

        return task_json_schema()
    from skyc.schemas.base import document_schema

    name, _, model = found.model.partition(":")
    module = importlib.import_module(f"{__name__}.{name}")
    return document_schema(getattr(module, model), kind, str(module.TITLE))
