"""Local clusters for tests: nodes that are directories under a test's own folder."""

from __future__ import annotations

from pathlib import Path

from skyc.model.nodes import ClusterInfo, Node


def make_local_cluster(root: Path, count: int = 2, name: str = "loc") -> ClusterInfo:
    names = ["head"] + [f"worker{i}" for i in range(1, count)]
    return ClusterInfo(
        name=name, cloud="local", workspace=str(root / "workspace"),
        nodes=[Node(name=names[i], rank=i, transport="local", ip="127.0.0.1",
                    node_dir=str(root / f"node{i}")) for i in range(count)])
