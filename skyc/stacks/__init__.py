"""Stacks: the Stack model, its Terraform JSON emitter, engines and workspaces."""

from __future__ import annotations

from skyc.stacks.engine import (
    ApplyFailed,
    Engine,
    ProgressCallback,
    ProgressEvent,
    ResourceChange,
    StackDiff,
)
from skyc.stacks.model import Output, Resource, Stack, Variable, ref
from skyc.stacks.terraform_json import STACK_FILE, VARS_FILE, emit, to_terraform
from skyc.stacks.workspace import check_cluster_name, cluster_workspace, write_stack

__all__ = [
    "STACK_FILE",
    "VARS_FILE",
    "ApplyFailed",
    "Engine",
    "Output",
    "ProgressCallback",
    "ProgressEvent",
    "Resource",
    "ResourceChange",
    "Stack",
    "StackDiff",
    "Variable",
    "check_cluster_name",
    "cluster_workspace",
    "emit",
    "ref",
    "to_terraform",
    "write_stack",
]
