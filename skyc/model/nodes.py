"""A provisioned cluster's nodes, as the runtime sees them.

Compilers turn engine outputs into these; the runtime connects to them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict


class Node(BaseModel):
    """One node of a cluster. Rank 0 is the head."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str                     # "head", "worker1", ...
    rank: int
    transport: Literal["local", "ssh", "kubernetes"]
    ip: str                       # the address other nodes use (private IP; 127.0.0.1 for local)
    host: str | None = None       # where skyc connects (public IP / hostname); ssh only
    port: int = 22
    user: str | None = None
    identity_file: str | None = None
    proxy_command: str | None = None  # ssh only: reach the node through this command
    #   (a bastion, e.g. ``ssh -W %h:%p jump``; %h, %p, %r are the node's host, port, user)
    node_dir: str | None = None   # local only: the node's home directory on this machine
    pod: str | None = None        # kubernetes only: the pod, its namespace and kubeconfig context
    namespace: str | None = None
    context: str | None = None


class ClusterInfo(BaseModel):
    """What the runtime needs to know about a provisioned cluster."""

    model_config = ConfigDict(extra="forbid")

    name: str
    cloud: str
    region: str | None = None
    zone: str | None = None
    nodes: list[Node]
    num_gpus_per_node: float = 0
    workspace: str                # $SKYC_HOME/clusters/<name>/ (keys, known_hosts, stack)


# In a cluster's workspace once it is provisioned (written by skyc.apply.provision).
CLUSTER_FILE = "cluster.json"
