"""The metadata every VM and TPU VM of a cluster carries: the SSH public key (the
``ssh_keys`` input, ``<user>:<key>``), no OS Login (the key is the way in), and the
node bootstrap as the startup script (with what the node is, for a TPU VM)."""

from __future__ import annotations

from typing import Any

from skyc.compiler.templates import render
from skyc.model.stack import Var

SSH_USER = "skyc"  # created from the ssh-keys metadata (and by the bootstrap if missing)


def metadata(cluster: str, environment: dict[str, str] | None = None,
             bucket_tools: bool = False) -> dict[str, Any]:
    """``bucket_tools``: the task mounts buckets (the bootstrap installs rclone, fuse3)."""
    return {
        "enable-oslogin": "FALSE",
        "ssh-keys": Var(name="ssh_keys"),
        "startup-script": render("node_bootstrap.sh.j2", cluster=cluster, ssh_user=SSH_USER,
                                 environment=environment or {}, bucket_tools=bucket_tools),
    }
