"""Lowering onto this machine: each node is a directory under the workspace.

One resource per node (terraform's built-in ``terraform_data``, no provider)
creates ``nodes/<name>/`` with a local command and removes it when destroyed.
Paths in the stack are relative to the workspace, so the stack does not depend
on where the workspace lives.
"""

from __future__ import annotations

from skyc.compiler import base
from skyc.compiler.base import BuildRequest, node_name
from skyc.model.stack import LocalCommand, Output, Ref, Resource, Stack


def build(request: BuildRequest) -> Stack:
    # The cluster's name and the task's labels: its nodes are no cloud's resources, so
    # the stack names no owner (the workspace records it, as for every cluster).
    labels = base.cluster_labels(request.cluster, request.candidate)
    stack = Stack(name=request.cluster, cloud="local", labels=labels,
                  backend=request.config.backend)
    dirs = []
    for rank in range(request.placement.num_nodes):
        key = f"node_{rank}"
        node_dir = f"nodes/{node_name(rank)}"  # relative to the workspace
        env = {"SKYC_NODE_DIR": node_dir}
        stack.add(Resource(
            key=key, types={"terraform": "terraform_data"},
            properties={"input": {"dir": node_dir, "labels": labels}},
            commands=[
                LocalCommand(command='mkdir -p "$SKYC_NODE_DIR"', environment=env),
                LocalCommand(command='rm -rf "$SKYC_NODE_DIR"', when="destroy", environment=env),
            ],
            # Nodes were one counted resource once; their state moves to the new name.
            formerly={"terraform": f"terraform_data.node[{rank}]"},
        ))
        dirs.append(Ref(resource=key, attribute="output.dir"))
    stack.outputs = {"node_dirs": Output(value=dirs)}
    return stack


workspace_values = base.no_workspace_values
