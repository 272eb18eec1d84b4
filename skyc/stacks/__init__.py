"""Stacks: the neutral Stack model, its emitters, the engines and their workspaces."""

from __future__ import annotations

from skyc.stacks.diagnostics import Diagnostic
from skyc.stacks.engine import (
    ApplyFailed,
    Engine,
    ProgressCallback,
    ProgressEvent,
    Refresh,
    ResourceChange,
    StackDiff,
)
from skyc.stacks.engines import emit, engine_names, open_engine, stack_engine, write_stack
from skyc.stacks.model import (
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
from skyc.stacks.terraform_json import STACK_FILE, to_terraform
from skyc.stacks.workspace import check_cluster_name, cluster_workspace, has_stack

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
    "stack_engine",
    "to_terraform",
    "write_stack",
]
