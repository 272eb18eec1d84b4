"""Cluster names: a task's name made safe for the cloud resources a stack names, or,
for a task without one, a name generated from its owner and content."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from skyc.errors import SkycError

if TYPE_CHECKING:
    from skyc.task import Task

MAX_NAME = 40
GENERATED_HASH = 6  # hex digits of a generated name's hash


def stack_safe_name(raw: str | None) -> str:
    """``raw`` (a task's name) as a cluster name: lower-case letters, digits and '-',
    at most 40 characters; ``skyc-cluster`` when nothing of it is left (a name of
    other letters only: tasks so named share it, and :func:`cluster_names_for` and the
    apply refuse two of them on one cluster, saying to use ``-c``)."""
    safe = re.sub(r"[^a-z0-9-]+", "-", (raw or "").lower()).strip("-")[:MAX_NAME]
    return safe or "skyc-cluster"


def generated_name(task: Task, owner: str) -> str:
    """The cluster of a task without a name, as SkyPilot's ``sky-<hash>-<user>``:
    ``skyc-<hash>-<user>``, the hash of the owner and the task's content (so planning
    and applying one file name one cluster, and two tasks two), the user the owner's
    in lower-case letters, digits and '-'; at most 40 characters."""
    from skyc.model.owner import user_part

    content = json.dumps(task.dump(), sort_keys=True, separators=(",", ":"), default=str)
    digest = hashlib.sha256(f"{owner}\n{content}".encode()).hexdigest()[:GENERATED_HASH]
    return f"skyc-{digest}-{user_part(owner)}"[:MAX_NAME].rstrip("-")


def cluster_name_for(task: Task, explicit: str | None, owner: str | None = None) -> str:
    """The cluster's name: ``-c NAME``, else the task's name, made stack-safe, else (a
    task without a name) :func:`generated_name` for ``owner`` (default: the config's
    owner, :func:`skyc.model.owner.owner`)."""
    if not explicit and not task.name:
        return generated_name(task, owner if owner is not None else _config_owner())
    name = stack_safe_name(explicit or task.name)
    if explicit and name != explicit:
        raise SkycError(
            f"cluster name {explicit!r} is not valid",
            hint="use lower-case letters, digits and '-' (it names cloud resources)",
        )
    return name


def _config_owner() -> str:
    from skyc.model.owner import owner
    from skyc.settings.config import load_config

    return owner(load_config())


def cluster_names_for(tasks: Sequence[Task], explicit: str | None = None,
                      owner: str | None = None) -> list[str]:
    """The cluster of each task, by :func:`cluster_name_for`; a repeated name gets its
    position as a suffix."""
    names: list[str] = []
    raw: dict[str, str | None] = {}
    if owner is None and not explicit and not all(t.name for t in tasks):
        owner = _config_owner()
    for task in tasks:
        name = cluster_name_for(task, explicit, owner)
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
