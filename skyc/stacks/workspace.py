"""Stack workspaces on disk: ``$SKYC_HOME/clusters/<name>/``.

A workspace holds the stack as its engine reads it (written by the engine's
module, see :mod:`skyc.stacks.registry`), its public input values (e.g. the
cluster's SSH public key), the engine's local state, the cluster's SSH key pair
(``keys/``, private key 0600), ``cluster.json`` once provisioned, and ``logs/``
(one file per engine run), and ``owner``: who the cluster belongs to (see
:mod:`skyc.model.owner`), recorded when its stack is first written and read by every
later build, so the names its owner's hash gave the cloud resources never change.

A workspace that holds a stack is a cluster whether or not the state database
remembers it: :mod:`skyc.apply.orphans` finds those it does not (a lost or restored
``state.db``) and records one again.
"""

from __future__ import annotations

import re
from pathlib import Path

from skyc.errors import ConfigError
from skyc.model.nodes import CLUSTER_FILE
from skyc.model.owner import OWNER_PATTERN
from skyc.settings.home import skyc_home
from skyc.stacks.registry import ENGINE_FILE, stack_engine, write_stack

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$")
OWNER_FILE = "owner"
# What skyc writes into a cluster's workspace besides the stack (a folder of exported
# stack files, ``skyc compile``'s, holds none of them).
_CLUSTER_MARKS = (ENGINE_FILE, "keys", CLUSTER_FILE)


def check_cluster_name(name: str) -> str:
    """Cluster names become directory names and cloud resource names."""
    if not NAME.match(name):
        raise ConfigError(
            f"invalid cluster name {name!r}",
            hint="use 1-63 letters, digits, '-' and '_', starting with a letter or digit",
        )
    return name


def cluster_workspace(name: str) -> Path:
    return skyc_home() / "clusters" / check_cluster_name(name)


def has_stack(workspace: Path) -> bool:
    return stack_engine(workspace) is not None


def recorded_owner(workspace: Path) -> str | None:
    """The owner recorded in the workspace, or None when none is."""
    path = workspace / OWNER_FILE
    if not path.is_file():
        return None
    text = path.read_text(encoding="utf-8", errors="replace").strip()
    if not OWNER_PATTERN.match(text):
        raise ConfigError(
            f"{path}: {text[:40]!r} is not a cluster owner (1-128 letters, digits and "
            "'._@+-')",
            hint="write the owner the cluster was created by (the config's user:, or "
            "user@host) into that file; the cluster's cloud names depend on it")
    return text


def cluster_owner(workspace: Path, current: str) -> str | None:
    """Whose names a build of the cluster in ``workspace`` gives its cloud resources:
    the recorded owner; None for a cluster whose stack was written before owners were
    recorded (it keeps its names, with no owner's hash); else ``current`` (a new
    cluster: :func:`record_owner` keeps it when its stack is written)."""
    recorded = recorded_owner(workspace)
    if recorded is not None:
        return recorded
    if has_stack(workspace) and any((workspace / m).exists() for m in _CLUSTER_MARKS):
        return None
    return current


def record_owner(workspace: Path, owner: str) -> None:
    """Record the cluster's owner, once: a recorded owner is never replaced."""
    if recorded_owner(workspace) is not None:
        return
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / OWNER_FILE).write_text(owner + "\n", encoding="utf-8")


__all__ = ["OWNER_FILE", "check_cluster_name", "cluster_owner", "cluster_workspace",
           "has_stack", "record_owner", "recorded_owner", "stack_engine", "write_stack"]
