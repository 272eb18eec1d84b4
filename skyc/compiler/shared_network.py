"""What every target whose clusters share a network per region has in common: the
inputs a cluster's stack takes from its network (``vpc_id``, ``subnet_id``), read from
the cluster's workspace (``network.json``, written by :mod:`skyc.apply.networks` once
the network is applied), with stand-in values before the network exists (a plan of a
cluster in a region skyc has no network in yet: the ids are known once it is made)."""

from __future__ import annotations

import json
from pathlib import Path

from skyc.errors import ConfigError
from skyc.model.stack import Var, Variable
from skyc.model.workspace import NETWORK_FILE

INPUTS = ("vpc_id", "subnet_id")
PENDING = {"vpc_id": "vpc-pending", "subnet_id": "subnet-pending"}
VPC, SUBNET = Var(name="vpc_id"), Var(name="subnet_id")


def input_variables(network: str) -> dict[str, Variable]:
    """The cluster stack's variables for its shared network ``network`` (its kind)."""
    return {"vpc_id": Variable(description=f"the region's shared {network}"),
            "subnet_id": Variable(description=f"the shared {network}'s subnet for the "
                                  "cluster's zone")}


def recorded_inputs(workspace: Path) -> dict[str, str]:
    """The network inputs written into a cluster's workspace, else :data:`PENDING`."""
    path = workspace / NETWORK_FILE
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        return dict(PENDING)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path} cannot be read ({exc})",
                          hint="remove it: skyc writes it again at the next apply") from None
    return {k: str(doc.get(k) or PENDING[k]) for k in INPUTS}
