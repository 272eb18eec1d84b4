"""The nodes: their directories, run as this machine's processes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from skyc.compiler.base import list_output, node_name
from skyc.model.nodes import Node
from skyc.settings.config import SkycConfig


def nodes(cluster: str, outputs: dict[str, Any], *, config: SkycConfig, workspace: Path
          ) -> list[Node]:
    return [
        Node(name=node_name(rank), rank=rank, transport="local", ip="127.0.0.1",
             node_dir=str((workspace / str(d)).resolve()))
        for rank, d in enumerate(list_output(outputs, "node_dirs", cluster))
    ]
