"""Lowering onto an SSH pool (``ssh/<pool>``): existing hosts become the nodes.

Nothing is created: one ``terraform_data`` per host records it in the stack's
state, so the cluster has a stack like any other.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from skyc.compiler import base
from skyc.compiler.base import BuildRequest, Capabilities, node_name
from skyc.config import SkycConfig, SshPool
from skyc.errors import ConfigError
from skyc.nodes import Node
from skyc.stacks.model import Output, Resource, Stack

# A pool's size bounds a cluster anyway (the optimizer sees one offer per host).
CAPABILITIES = Capabilities(cloud="ssh", multi_node=True, creates_resources=False,
                            max_nodes=1024)

_HOST = re.compile(
    r"^(?:(?P<user>[^@\s]+)@)?(?P<host>[^:@\s]+|\[[0-9a-fA-F:]+\])(?::(?P<port>\d+))?$"
)


def parse_host(spec: str, pool: SshPool) -> dict[str, Any]:
    """``host``, ``user@host``, ``host:port`` or ``user@host:port``; pool defaults fill in."""
    match = _HOST.match(spec.strip())
    if not match:
        raise ConfigError(f"ssh_pools: {spec!r} is not a host, user@host or host:port")
    return {
        "host": match.group("host").strip("[]"),
        "port": int(match.group("port") or pool.port),
        "user": match.group("user") or pool.user,
    }


def _pool(config: SkycConfig, name: str | None) -> SshPool:
    if not name or name not in config.ssh_pools:
        known = ", ".join(sorted(config.ssh_pools)) or "none"
        raise ConfigError(
            f"infra: ssh pool {name!r} is not in the config (known pools: {known})",
            hint="add it under ssh_pools in $SKYC_HOME/config.yaml",
        )
    return config.ssh_pools[name]


def build(request: BuildRequest) -> Stack:
    placement = request.placement
    pool = _pool(request.config, placement.region)
    if placement.num_nodes > len(pool.hosts):
        raise ConfigError(
            f"ssh pool {placement.region!r} has {len(pool.hosts)} host(s); "
            f"the task needs {placement.num_nodes} nodes"
        )
    labels = request.labels
    stack = Stack(name=request.cluster, cloud="ssh", region=placement.region, labels=labels,
                  backend=request.config.backend)
    refs = []
    for rank, spec in enumerate(pool.hosts[: placement.num_nodes]):
        name = f"host_{rank}"
        stack.add(Resource(type="terraform_data", name=name, properties={
            "input": {**parse_host(spec, pool), "pool": placement.region, "labels": labels},
        }))
        refs.append("${terraform_data." + name + ".output}")
    stack.outputs = {"hosts": Output(value=refs)}
    return stack


workspace_values = base.no_workspace_values


def nodes_from_outputs(
    cluster: str, outputs: dict[str, Any], *, config: SkycConfig, workspace: Path
) -> list[Node]:
    nodes = []
    for rank, item in enumerate(base.list_output(outputs, "hosts", cluster)):
        pool = config.ssh_pools.get(str(item.get("pool")))
        identity = pool.identity_file if pool else None
        nodes.append(Node(
            name=node_name(rank), rank=rank, transport="ssh", ip=str(item["host"]),
            host=str(item["host"]), port=int(item["port"]), user=item.get("user"),
            identity_file=str(Path(identity).expanduser()) if identity else None,
        ))
    return nodes


classify = base.classify_nothing  # the hosts exist already; nothing is provisioned
