"""Cluster names: a task's name made safe for the cloud resources a stack names."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from skyc.errors import SkycError

if TYPE_CHECKING:
    from skyc.task import Task


def stack_safe_name(raw: str | None) -> str:
    """``raw`` (a task's name) as a cluster name: lower-case letters, digits and '-',
    at most 40 characters; ``skyc-cluster`` when nothing of it is left."""
    return re.sub(r"[^a-z0-9-]+", "-", (raw or "").lower()).strip("-")[:40] or "skyc-cluster"


def cluster_name_for(task: Task, explicit: str | None) -> str:
    """The cluster's name: ``-c NAME``, else the task's name, made stack-safe."""
    name = stack_safe_name(explicit or task.name)
    if explicit and name != explicit:
        raise SkycError(
            f"cluster name {explicit!r} is not valid",
            hint="use lower-case letters, digits and '-' (it names cloud resources)",
        )
    return name


def cluster_names_for(tasks: Sequence[Task], explicit: str | None = None) -> list[str]:
    """The cluster of each task, by :func:`cluster_name_for`; a repeated name gets its
    position as a suffix."""
    names: list[str] = []
    raw: dict[str, str | None] = {}
    for task in tasks:
        name = cluster_name_for(task, explicit)
        if not explicit and name in raw and raw[name] != task.name:
            raise SkycError(
                f"tasks {raw[name]!r} and {task.name!r} would share cluster {name!r} "
                "(a cluster name keeps lower-case letters, digits and '-', 40 at most)",
                hint="give the tasks names that differ in those characters, or apply "
                "each task with -c NAME",
            )
        raw.setdefault(name, task.name)
        if name in names:
            name = f"{name}-{len(names)}"
        names.append(name)
    return names
