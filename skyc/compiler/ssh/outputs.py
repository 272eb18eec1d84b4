"""SSH pool nodes from the stack's outputs: each host as the pool's config names it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from skyc.compiler.base import list_output, node_name
from skyc.model.nodes import Node
from skyc.settings.config import SkycConfig


def nodes(
    cluster: str, outputs: dict[str, Any], *, config: SkycConfig, workspace: Path
) -> list[Node]:
    found = []
    for rank, item in enumerate(list_output(outputs, "hosts", cluster)):
        pool = config.ssh_pools.get(str(item.get("pool")))
        identity = pool.identity_file if pool else None
        found.append(Node(
            name=node_name(rank), rank=rank, transport="ssh", ip=str(item["host"]),
            host=str(item["host"]), port=int(item["port"]), user=item.get("user"),
            identity_file=str(Path(identity).expanduser()) if identity else None,
        ))
    return found
