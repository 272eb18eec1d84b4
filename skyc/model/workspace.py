"""A cluster's workspace, ``$SKYC_HOME/clusters/<name>/``, as every stage names it: the
cluster name's rules, the directory, and ``owner``: who the cluster belongs to (see
:mod:`skyc.model.owner`), recorded when its stack is first written and read by every
later build, so the names its owner's hash gave the cloud resources never change.

What else a workspace holds (the stack, the engine's state, keys, logs) is the stacks
stage's: :mod:`skyc.stacks.workspace`.
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import ValidationError

from skyc.errors import ConfigError
from skyc.model.nodes import CLUSTER_FILE, ClusterInfo
from skyc.model.owner import OWNER_PATTERN
from skyc.settings.home import skyc_home

# The file that names a workspace's engine (:mod:`skyc.stacks.registry` writes it).
ENGINE_FILE = ".skyc-engine"
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$")
OWNER_FILE = "owner"
# Whether the cluster's nodes are in the network skyc keeps for its region ("shared") or
# in one of the cluster's own ("own": a cluster whose stack was written before networks
# were shared keeps its VPC until it is recreated).
NETWORK_MODE_FILE = "network"
# A sharing cluster's network's ids (its stack's inputs), written when the network is
# applied (skyc.apply.networks) and read by its target's lowering.
NETWORK_FILE = "network.json"
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
    if (workspace / ENGINE_FILE).is_file() and any(
            (workspace / m).exists() for m in _CLUSTER_MARKS):
        return None
    return current


def record_owner(workspace: Path, owner: str) -> None:
    """Record the cluster's owner, once: a recorded owner is never replaced."""
    if recorded_owner(workspace) is not None:
        return
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / OWNER_FILE).write_text(owner + "\n", encoding="utf-8")




def recorded_cluster(name: str) -> ClusterInfo | None:
    """The cluster's nodes as its last apply recorded them; None when there is no
    readable record (never provisioned, or already gone)."""
    try:
        return ClusterInfo.model_validate_json(
            (cluster_workspace(name) / CLUSTER_FILE).read_text())
    except (OSError, ValidationError):
        return None


def shares_network(workspace: Path) -> bool:
    """Whether a build of the cluster in ``workspace`` puts its nodes in the region's
    shared network: as recorded; a cluster whose stack was written before this was
    recorded keeps its own network; a new cluster shares."""
    path = workspace / NETWORK_MODE_FILE
    if path.is_file():
        return path.read_text(encoding="utf-8", errors="replace").strip() != "own"
    return not ((workspace / ENGINE_FILE).is_file() and any(
        (workspace / m).exists() for m in _CLUSTER_MARKS))


def record_network_mode(workspace: Path, shared: bool) -> None:
    """Record where the cluster's nodes are, once."""
    path = workspace / NETWORK_MODE_FILE
    if path.is_file():
        return
    workspace.mkdir(parents=True, exist_ok=True)
    path.write_text(("shared" if shared else "own") + "\n", encoding="utf-8")
