"""This machine: each node is a directory under the cluster's workspace (terraform only:
its nodes are local commands run by the engine, which Pulumi's SDK alone cannot run)."""

from __future__ import annotations

from skyc.compiler.base import Capabilities, Target

TARGET = Target(
    name="local",
    engines=("terraform",),
    # Local nodes are process trees on this machine: a few dozen at most is useful.
    capabilities=Capabilities(cloud="local", multi_node=True, open_ports=True, max_nodes=64),
)
