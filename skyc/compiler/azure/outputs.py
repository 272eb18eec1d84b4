"""Azure nodes from the stack's outputs: per node its name, private and public IP,
and the SSH user."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from skyc.compiler.base import list_output, node_name
from skyc.compiler.keys import RSA as KEY_ALGORITHM
from skyc.compiler.keys import private_key_path
from skyc.errors import EngineError
from skyc.model.nodes import Node
from skyc.settings.config import SkycConfig


def nodes(
    cluster: str, outputs: dict[str, Any], *, config: SkycConfig, workspace: Path
) -> list[Node]:
    names = list_output(outputs, "names", cluster)
    private = list_output(outputs, "private_ips", cluster)
    public = list_output(outputs, "public_ips", cluster)
    user = outputs.get("ssh_user")
    if not isinstance(user, str) or not user:
        raise EngineError(f"cluster {cluster}: stack outputs lack ssh_user")
    if not len(names) == len(private) == len(public):
        raise EngineError(f"cluster {cluster}: {len(names)} names, {len(private)} private "
                          f"and {len(public)} public IPs in the stack outputs")
    missing = [str(n) for n, pub in zip(names, public, strict=True) if not pub]
    if missing:
        raise EngineError(f"cluster {cluster}: no public IP for {', '.join(missing)}")
    key = str(private_key_path(workspace, KEY_ALGORITHM))
    return [
        Node(name=node_name(rank), rank=rank, transport="ssh", ip=str(priv), host=str(pub),
             port=22, user=user, identity_file=key)
        for rank, (priv, pub) in enumerate(zip(private, public, strict=True))
    ]
