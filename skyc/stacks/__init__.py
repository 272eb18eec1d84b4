"""Stacks: the emitters of the neutral Stack model (``skyc.model.stack``), the engines and
their workspaces."""

from __future__ import annotations

from typing import TYPE_CHECKING

from skyc.errors import ApplyFailed
from skyc.lazy import lazy_exports

if TYPE_CHECKING:
    from skyc.model.diagnostics import Diagnostic
    from skyc.model.stack import (
        Block,
        LocalCommand,
        Output,
        Provider,
        Ref,
        Resource,
        Stack,
        Var,
        Variable,
    )
    from skyc.stacks.engine import (
        Engine,
        ProgressCallback,
        ProgressEvent,
        Refresh,
        ResourceChange,
        StackDiff,
    )
    from skyc.stacks.registry import (
        emit,
        engine_names,
        open_engine,
        schema_family,
        stack_engine,
        write_stack,
    )
    from skyc.stacks.terraform_json import STACK_FILE, to_terraform
    from skyc.stacks.workspace import check_cluster_name, cluster_workspace, has_stack

# Each name's module, imported on first use: a command that needs one of them (a
# cluster's workspace directory, the Stack model) does not load every engine's module.
_STACK = "skyc.model.stack"
_EXPORTS = {
    "Diagnostic": "skyc.model.diagnostics", "Engine": "engine",
    "ProgressCallback": "engine", "ProgressEvent": "engine", "Refresh": "engine",
    "ResourceChange": "engine", "StackDiff": "engine", "emit": "registry",
    "engine_names": "registry", "open_engine": "registry", "stack_engine": "registry",
    "write_stack": "registry", "schema_family": "registry", "Block": _STACK,
    "LocalCommand": _STACK, "Output": _STACK,
    "Provider": _STACK, "Ref": _STACK, "Resource": _STACK, "Stack": _STACK,
    "Var": _STACK, "Variable": _STACK, "STACK_FILE": "terraform_json",
    "to_terraform": "terraform_json", "check_cluster_name": "workspace",
    "cluster_workspace": "workspace", "has_stack": "workspace",
}


__getattr__ = lazy_exports(__name__, _EXPORTS)


__all__ = [
    "STACK_FILE",
    "ApplyFailed",
    "Block",
    "Diagnostic",
    "Engine",
    "LocalCommand",
    "Output",
    "ProgressCallback",
    "ProgressEvent",
    "Provider",
    "Ref",
    "Refresh",
    "Resource",
    "ResourceChange",
    "Stack",
    "StackDiff",
    "Var",
    "Variable",
    "check_cluster_name",
    "cluster_workspace",
    "emit",
    "engine_names",
    "has_stack",
    "open_engine",
    "schema_family",
    "stack_engine",
    "to_terraform",
    "write_stack",
]
