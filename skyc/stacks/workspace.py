"""Stack workspaces on disk: ``$SKYC_HOME/clusters/<name>/``.

A workspace holds the stack as its engine reads it (written by the engine's
module, see :mod:`skyc.stacks.engines`), its public input values (e.g. the
cluster's SSH public key), the engine's local state, the cluster's SSH key pair
(``keys/``, private key 0600), ``cluster.json`` once provisioned, and ``logs/``
(one file per engine run).

A workspace that holds a stack is a cluster whether or not the state database
remembers it: :mod:`skyc.apply.orphans` finds those it does not (a lost or restored
``state.db``) and records one again.
"""

from __future__ import annotations

import re
from pathlib import Path

from skyc.errors import ConfigError
from skyc.settings.home import skyc_home
from skyc.stacks.engines import stack_engine, write_stack

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$")


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


__all__ = ["check_cluster_name", "cluster_workspace", "has_stack", "stack_engine",
           "write_stack"]
