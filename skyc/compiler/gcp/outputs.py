"""GCP nodes from the stack's outputs.

VMs: one node per instance (its internal and external IP, the SSH user). TPU
VMs: every worker of every slice is a node, in order (the slice's network
endpoints are listed by worker id), so a 4-host ``tpu-v4-32`` is a 4-node
cluster: ranks 0-3, each worker's internal IP in ``SKYPILOT_NODE_IPS``. The
endpoints come as the Pulumi CLI prints them (``ipAddress``, ``accessConfigs``
/ ``externalIp``); the SDK's own spelling (``ip_address``, ...) is read too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from skyc.compiler.base import list_output, node_name
from skyc.compiler.keys import private_key_path
from skyc.errors import EngineError
from skyc.model.nodes import Node
from skyc.settings.config import SkycConfig


def _field(item: Any, *keys: str) -> Any:
    if isinstance(item, dict):
        for key in keys:
            if key in item:
                return item[key]
    return None


def _endpoint(item: Any, cluster: str) -> tuple[str, str | None]:
    internal = _field(item, "ipAddress", "ip_address")
    if not internal:
        raise EngineError(f"cluster {cluster}: a TPU worker has no IP address in the outputs")
    access = _field(item, "accessConfigs", "access_configs") or []
    external = _field(access[0], "externalIp", "external_ip") if access else None
    return str(internal), str(external) if external else None


def addresses(cluster: str, outputs: dict[str, Any]) -> list[tuple[str, str | None]]:
    """(internal IP, external IP) of every node, by rank."""
    if "tpu_endpoints" in outputs:
        slices = list_output(outputs, "tpu_endpoints", cluster)
        hosts = list_output(outputs, "tpu_hosts", cluster)
        found: list[tuple[str, str | None]] = []
        for index, (endpoints, expected) in enumerate(zip(slices, hosts, strict=True)):
            workers = list(endpoints or [])
            if len(workers) != int(expected):
                raise EngineError(f"cluster {cluster}: TPU slice {index} reports {len(workers)} "
                                  f"workers, expected {expected}")
            found += [_endpoint(w, cluster) for w in workers]
        return found
    internal = list_output(outputs, "internal_ips", cluster)
    external = list_output(outputs, "external_ips", cluster)
    if len(internal) != len(external):
        raise EngineError(f"cluster {cluster}: {len(internal)} internal but {len(external)} "
                          "external IPs")
    return [(str(i), str(e) if e else None) for i, e in zip(internal, external, strict=True)]


def nodes(
    cluster: str, outputs: dict[str, Any], *, config: SkycConfig, workspace: Path
) -> list[Node]:
    user = outputs.get("ssh_user")
    if not isinstance(user, str):
        raise EngineError(f"cluster {cluster}: stack outputs lack ssh_user")
    key = str(private_key_path(workspace))
    return [
        Node(name=node_name(rank), rank=rank, transport="ssh", ip=internal,
             host=external or internal, port=22, user=user, identity_file=key)
        for rank, (internal, external) in enumerate(addresses(cluster, outputs))
    ]


# A VM's status as GCP reports it (``currentStatus``; the desired one where the
# engine read no current one): these are stopped nodes, whose disks are kept.
_INSTANCE_TYPES = ("gcp:compute/instance:Instance", "google_compute_instance")
_STOPPED = frozenset({"STOPPING", "TERMINATED", "SUSPENDING", "SUSPENDED"})


def stopped(resource_type: str, values: dict[str, Any]) -> bool | None:
    """Whether a resource read back by the engine is a VM that is stopped (True), a VM
    that runs (False), or not a VM at all (None: TPU VMs are created and deleted only,
    and are not stopped)."""
    if resource_type not in _INSTANCE_TYPES:
        return None
    state = (values.get("currentStatus") or values.get("current_status")
             or values.get("desiredStatus") or values.get("desired_status") or "")
    return str(state).upper() in _STOPPED
