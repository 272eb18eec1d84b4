"""Lowering onto this machine: each node is a directory under the workspace.

``terraform_data`` resources (built into terraform, no provider) create
``nodes/<name>/`` with a local-exec provisioner and remove it when destroyed.
Paths in the stack are relative to the workspace, so the stack does not depend
on where the workspace lives.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from skyc.compiler import base
from skyc.compiler.base import NODE_NAME_EXPR, BuildRequest, Capabilities, node_name
from skyc.config import SkycConfig
from skyc.nodes import Node
from skyc.stacks.model import Output, Resource, Stack

# Local nodes are process trees on this machine: a few dozen at most is useful.
CAPABILITIES = Capabilities(cloud="local", multi_node=True, open_ports=True, max_nodes=64)

_ENV = {"SKYC_NODE_DIR": "${self.input.dir}"}


def build(request: BuildRequest) -> Stack:
    labels = request.labels
    stack = Stack(name=request.cluster, cloud="local", labels=labels,
                  backend=request.config.backend)
    stack.add(Resource(type="terraform_data", name="node", properties={
        "count": request.placement.num_nodes,
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


workspace_values = base.no_workspace_values


def nodes_from_outputs(
    cluster: str, outputs: dict[str, Any], *, config: SkycConfig, workspace: Path
) -> list[Node]:
    return [
        Node(name=node_name(rank), rank=rank, transport="local", ip="127.0.0.1",
             node_dir=str(d))
        for rank, d in enumerate(base.list_output(outputs, "node_dirs", cluster))
    ]


classify = base.classify_nothing  # creating a directory has no capacity or quota to run out of
