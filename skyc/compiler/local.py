"""Lowering onto this machine: each node is a directory under the workspace.

``terraform_data`` resources (built into terraform, no provider) create
``nodes/<name>/`` with a local-exec provisioner and remove it when destroyed.
Paths in the stack are relative to the workspace, so the stack does not depend
on where the workspace lives.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from skyc.compiler.base import NODE_NAME_EXPR, Capabilities, cluster_labels, node_name
from skyc.config import SkycConfig
from skyc.errors import EngineError, ProvisionError
from skyc.nodes import Node
from skyc.optimizer.plan import Placement
from skyc.stacks.model import Output, Resource, Stack
from skyc.task.candidate import ResourceCandidate

CAPABILITIES = Capabilities(cloud="local", multi_node=True, open_ports=True)

_ENV = {"SKYC_NODE_DIR": "${self.input.dir}"}


def build(
    cluster: str,
    placement: Placement,
    candidate: ResourceCandidate,
    *,
    config: SkycConfig,
    workspace: Path,
) -> Stack:
    labels = cluster_labels(cluster, candidate)
    stack = Stack(name=cluster, cloud="local", labels=labels, backend=config.backend)
    stack.add(Resource(type="terraform_data", name="node", properties={
        "count": placement.num_nodes,
        "input": {"dir": "${format(\"nodes/%s\", " + NODE_NAME_EXPR + ")}", "labels": labels},
        "provisioner": [
            {"local-exec": {"command": 'mkdir -p "$SKYC_NODE_DIR"', "environment": _ENV}},
            {"local-exec": {
                "when": "destroy", "command": 'rm -rf "$SKYC_NODE_DIR"', "environment": _ENV,
            }},
        ],
    }))
    stack.outputs = {
        "node_dirs": Output(value="${[for n in terraform_data.node : abspath(n.output.dir)]}"),
    }
    return stack


def workspace_values(stack: Stack, workspace: Path) -> dict[str, Any]:
    return {}


def nodes_from_outputs(
    cluster: str, outputs: dict[str, Any], *, config: SkycConfig, workspace: Path
) -> list[Node]:
    dirs = outputs.get("node_dirs")
    if not isinstance(dirs, list):
        raise EngineError(f"cluster {cluster}: stack outputs lack node_dirs")
    return [
        Node(name=node_name(rank), rank=rank, transport="local", ip="127.0.0.1",
             node_dir=str(d))
        for rank, d in enumerate(dirs)
    ]


def classify(
    diagnostics: list[dict[str, Any]], placement: Placement | None
) -> ProvisionError | None:
    return None  # creating a directory has no capacity or quota to run out of
