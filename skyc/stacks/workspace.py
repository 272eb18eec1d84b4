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

from pathlib import Path

from skyc.model.workspace import (
    ENGINE_FILE,
    OWNER_FILE,
    check_cluster_name,
    cluster_owner,
    cluster_workspace,
    record_owner,
    recorded_owner,
)
from skyc.stacks.registry import stack_engine, write_stack


def has_stack(workspace: Path) -> bool:
    return stack_engine(workspace) is not None


__all__ = ["ENGINE_FILE", "OWNER_FILE", "check_cluster_name", "cluster_owner",
           "cluster_workspace", "has_stack", "record_owner", "recorded_owner",
           "stack_engine", "write_stack"]
