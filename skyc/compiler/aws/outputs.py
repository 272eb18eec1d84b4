"""AWS nodes from the stack's outputs: private and public IPs, the SSH user."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from skyc.compiler.base import node_name
from skyc.compiler.keys import private_key_path
from skyc.errors import EngineError
from skyc.model.nodes import Node
from skyc.settings.config import SkycConfig


def nodes(
    cluster: str, outputs: dict[str, Any], *, config: SkycConfig, workspace: Path
) -> list[Node]:
    try:
        private = list(outputs["private_ips"])
        public = list(outputs["public_ips"])
        user = str(outputs["ssh_user"])
    except (KeyError, TypeError) as exc:
        raise EngineError(f"cluster {cluster}: stack outputs lack {exc}") from None
    if len(private) != len(public):
        raise EngineError(f"cluster {cluster}: {len(private)} private but {len(public)} public IPs")
    key = str(private_key_path(workspace))
    return [
        Node(name=node_name(rank), rank=rank, transport="ssh", ip=str(priv),
             host=str(pub or priv), port=22, user=user, identity_file=key)
        for rank, (priv, pub) in enumerate(zip(private, public, strict=True))
    ]


def ssh_proxy_command(config: SkycConfig, region: str | None) -> str | None:
    """The command the config routes SSH to this region's nodes through
    (``aws.ssh_proxy_command``: one for every region, or one per region), or None."""
    setting = config.aws.ssh_proxy_command
    if isinstance(setting, dict):
        return setting.get(region) if region else None
    return setting


def stopped(resource_type: str, values: dict[str, Any]) -> bool | None:
    """Whether a resource read back by the engine is a node that is stopped (True), a
    node that runs (False), or not a node at all (None)."""
    if resource_type not in ("aws_instance", "aws:ec2/instance:Instance"):
        return None
    state = values.get("instance_state") or values.get("instanceState")
    return state in ("stopping", "stopped")
