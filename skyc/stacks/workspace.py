"""Stack workspaces on disk: ``$SKYC_HOME/clusters/<name>/``.

A workspace holds the stack (``main.tf.json``), its variable values
(``terraform.tfvars.json``: public values only, e.g. the cluster's SSH public
key), the engine's local state and plugins (``.terraform/``,
``terraform.tfstate``), the cluster's SSH key pair (``keys/``, private key
0600), ``cluster.json`` once provisioned, and ``logs/`` (one file per engine run).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from skyc.config import skyc_home
from skyc.errors import ConfigError
from skyc.stacks.model import Stack
from skyc.stacks.terraform_json import STACK_FILE, VARS_FILE, dumps, emit

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$")


def check_cluster_name(name: str) -> str:
    """Cluster names become directory names and cloud resource names."""
    if not _NAME.match(name):
        raise ConfigError(
            f"invalid cluster name {name!r}",
            hint="use 1-63 letters, digits, '-' and '_', starting with a letter or digit",
        )
    return name


def cluster_workspace(name: str) -> Path:
    return skyc_home() / "clusters" / check_cluster_name(name)


def _write_if_changed(path: Path, text: str) -> None:
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def write_stack(stack: Stack, workspace: Path, values: dict[str, Any] | None = None) -> Path:
    """Write ``main.tf.json`` (and the variable values, if any); returns the stack file."""
    workspace.mkdir(parents=True, exist_ok=True)
    path = workspace / STACK_FILE
    _write_if_changed(path, emit(stack))
    vars_path = workspace / VARS_FILE
    if values:
        _write_if_changed(vars_path, dumps(values))
    elif vars_path.exists():
        vars_path.unlink()
    return path
