"""Each node a directory under the workspace (terraform's built-in ``terraform_data``);
in the region out of capacity the node's command fails as the cloud would say it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from skyc.compiler.base import BuildRequest, cluster_labels, node_name
from skyc.model.stack import LocalCommand, Output, Ref, Resource, Stack
from tests.support.lambda_cloud.offers import FULL_REGION

OUT_OF_CAPACITY = "echo 'InsufficientCapacity: no cpu_4x left in the region' >&2; exit 1"


def build(request: BuildRequest) -> Stack:
    labels = cluster_labels(request.cluster, request.candidate)
    region = request.placement.region
    stack = Stack(name=request.cluster, cloud="lambda", region=region, labels=labels)
    dirs = []
    for rank in range(request.placement.num_nodes):
        node_dir = f"nodes/{node_name(rank)}"
        create = OUT_OF_CAPACITY if region == FULL_REGION else 'mkdir -p "$NODE_DIR"'
        stack.add(Resource(
            key=f"node_{rank}", types={"terraform": "terraform_data"},
            properties={"input": {"dir": node_dir, "region": region}},
            commands=[
                LocalCommand(command=create, environment={"NODE_DIR": node_dir}),
                LocalCommand(command='rm -rf "$NODE_DIR"', when="destroy",
                             environment={"NODE_DIR": node_dir}),
            ],
        ))
        dirs.append(Ref(resource=f"node_{rank}", attribute="output.dir"))
    stack.outputs = {"node_dirs": Output(value=dirs)}
    return stack


def workspace_values(stack: Stack, workspace: Path) -> dict[str, Any]:
    return {}
