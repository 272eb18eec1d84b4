"""The compiler: lower a cluster placement into a Stack, one module per cloud.

Every cloud module has the same function set (see :mod:`skyc.compiler.base`).
This package picks the module for ``placement.cloud`` and applies the checks
its capabilities record calls for.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any, cast

from skyc.compiler.base import BuildRequest, Capabilities, CloudModule, check_supported
from skyc.config import SkycConfig
from skyc.errors import ProvisionError, UnsupportedFeature
from skyc.nodes import Node
from skyc.optimizer.plan import Placement
from skyc.stacks.model import Stack
from skyc.stacks.workspace import check_cluster_name
from skyc.task.candidate import ResourceCandidate

TARGETS = ("aws", "local", "ssh")


def cloud_module(cloud: str) -> CloudModule:
    if cloud not in TARGETS:
        raise UnsupportedFeature(
            f"infra: skyc cannot provision on {cloud!r} yet (supported: {', '.join(TARGETS)})"
        )
    return cast(CloudModule, importlib.import_module(f"skyc.compiler.{cloud}"))


def capabilities(cloud: str) -> Capabilities:
    return cloud_module(cloud).CAPABILITIES


def build_stack(
    cluster: str,
    placement: Placement,
    candidate: ResourceCandidate,
    *,
    config: SkycConfig,
    workspace: Path,
) -> Stack:
    """The cluster's stack. Pure: reads nothing and writes nothing on disk."""
    check_cluster_name(cluster)
    module = cloud_module(placement.cloud)
    check_supported(module.CAPABILITIES, placement, candidate)
    return module.build(BuildRequest(cluster=cluster, placement=placement, candidate=candidate,
                                     config=config, workspace=workspace))


def workspace_values(stack: Stack, workspace: Path) -> dict[str, Any]:
    """Values of the stack's input variables; may create files (the cluster's SSH key)."""
    return cloud_module(stack.cloud).workspace_values(stack, workspace)


def nodes_from_outputs(
    cloud: str,
    cluster: str,
    outputs: dict[str, Any],
    *,
    config: SkycConfig,
    workspace: Path,
) -> list[Node]:
    """The cluster's nodes from the engine's outputs."""
    return cloud_module(cloud).nodes_from_outputs(
        cluster, outputs, config=config, workspace=workspace
    )


def classify_error(
    cloud: str, diagnostics: list[dict[str, Any]], *, placement: Placement | None = None
) -> ProvisionError | None:
    """A ProvisionError for the first diagnostic the cloud module recognizes, else None."""
    return cloud_module(cloud).classify(diagnostics, placement)


__all__ = [
    "TARGETS",
    "Capabilities",
    "build_stack",
    "capabilities",
    "classify_error",
    "cloud_module",
    "nodes_from_outputs",
    "workspace_values",
]
