"""Per-cluster SSH key pairs, kept in the workspace (``keys/``, private key 0600)."""

from __future__ import annotations

import os
from pathlib import Path

PRIVATE_KEY = "keys/id_ed25519"


def private_key_path(workspace: Path) -> Path:
    return workspace / PRIVATE_KEY


def ensure_key_pair(workspace: Path) -> str:
    """Create the cluster's ed25519 key pair once; return the OpenSSH public key line."""
    import asyncssh

    private = private_key_path(workspace)
    public = private.with_suffix(".pub")
    if private.exists() and public.exists():
        return public.read_text().strip()
    private.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    key = asyncssh.generate_private_key("ssh-ed25519", comment=f"skyc-{workspace.name}")
    fd = os.open(private, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(key.export_private_key("openssh"))
    os.chmod(private, 0o600)
    line: str = key.export_public_key("openssh").decode().strip()
    public.write_text(line + "\n")
    return line
