"""SSH pools (``ssh/<pool>``): existing hosts from the config become the nodes
(terraform only: the stack records the hosts with terraform's built-in resource)."""

from __future__ import annotations

from skyc.compiler.base import Capabilities, Target

TARGET = Target(
    name="ssh",
    engines=("terraform",),
    # A pool's size bounds a cluster anyway (the optimizer sees one offer per host).
    capabilities=Capabilities(cloud="ssh", multi_node=True, creates_resources=False,
                              max_nodes=1024),
)
