"""A task given on the command line (``skyc exec CLUSTER 'cmd'``, ``skyc launch -c
CLUSTER 'cmd'``), not in a file."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from skyc.task.loader import TaskFile
from skyc.task.overrides import apply_to_document

TASK_SUFFIXES = (".yaml", ".yml")


def is_task_file(text: str, suffixes: tuple[str, ...] = TASK_SUFFIXES) -> bool:
    """Whether ``text`` names a file (anything that exists at that path, so a FIFO or a
    device is refused by the file reader, not run; or a path ending in one of
    ``suffixes``) rather than a command to run."""
    import os

    path = Path(text).expanduser()
    return path.suffix.lower() in suffixes or os.path.lexists(path)


def inline_task(command: str, *, env: Mapping[str, str] | None = None,
                secrets: Mapping[str, str | None] | None = None,
                num_nodes: int | None = None,
                overrides: Mapping[str, Any] | None = None) -> TaskFile:
    """A one-task file whose ``run`` is ``command`` (validated like a file's task)."""
    from pydantic import ValidationError

    from skyc.errors import TaskSpecError
    from skyc.task.problems import problems_from
    from skyc.task.spec import Task

    if not command.strip():
        from skyc.errors import ConfigError

        raise ConfigError("the command is empty",
                          hint="give a task file or a command, e.g. skyc exec CLUSTER "
                          "'nvidia-smi' or skyc launch -c CLUSTER 'nvidia-smi'")
    doc: dict[str, object] = {"run": command}
    if env:
        doc["envs"] = dict(env)
    if secrets:
        import os

        doc["secrets"] = {k: v if v is not None else os.environ.get(k) for k, v in secrets.items()}
    if num_nodes is not None:
        doc["num_nodes"] = num_nodes
    try:
        task = Task.model_validate(apply_to_document(doc, overrides or {}))
    except ValidationError as exc:
        raise TaskSpecError(problems_from(exc, Task, "<command line>", {})) from None
    return TaskFile(path=Path("<command line>"), header=None, tasks=[task], warnings=[])
