"""Lowering onto an SSH pool (``ssh/<pool>``): existing hosts become the nodes.

Nothing is created: one ``terraform_data`` per host records it in the stack's
state, so the cluster has a stack like any other.
"""

from __future__ import annotations

import re
from typing import Any

from skyc.compiler import base
from skyc.compiler.base import BuildRequest
from skyc.errors import ConfigError
from skyc.model.stack import Output, Ref, Resource, Stack
from skyc.settings.config import SkycConfig, SshPool

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
    # The cluster's name and the task's labels: its nodes are no cloud's resources, so
    # the stack names no owner (the workspace records it, as for every cluster).
    labels = base.cluster_labels(request.cluster, request.candidate)
    stack = Stack(name=request.cluster, cloud="ssh", region=placement.region, labels=labels,
                  backend=request.config.backend)
    refs = []
    for rank, spec in enumerate(pool.hosts[: placement.num_nodes]):
        key = f"host_{rank}"
        stack.add(Resource(key=key, types={"terraform": "terraform_data"}, properties={
            "input": {**parse_host(spec, pool), "pool": placement.region, "labels": labels},
        }))
        refs.append(Ref(resource=key, attribute="output"))
    stack.outputs = {"hosts": Output(value=refs)}
    return stack


workspace_values = base.no_workspace_values
