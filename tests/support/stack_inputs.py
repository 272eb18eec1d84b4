"""Input values for a cluster's stack run without skyc's apply (a program under the
mock runtime, a workspace written by hand): what skyc.apply.networks would give a
cluster that shares its region's network."""

from __future__ import annotations

from typing import Any

from skyc.model.stack import Stack

NETWORK = {"vpc_id": "vpc-0test", "subnet_id": "subnet-0test"}


def with_network(stack: Stack, values: dict[str, Any]) -> dict[str, Any]:
    """``values`` and, where the stack takes them, its shared network's ids."""
    return {**values, **{k: v for k, v in NETWORK.items() if k in stack.variables}}
