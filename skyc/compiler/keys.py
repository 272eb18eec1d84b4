"""Per-cluster SSH key pairs, kept in the workspace (``keys/``, private key 0600).

ed25519 by default; a target whose cloud documents RSA keys only (Azure) asks for an
RSA pair (3072 bits, OpenSSH's default size), kept beside it as ``keys/id_rsa``.
"""

from __future__ import annotations

import os
from pathlib import Path

ED25519 = "ssh-ed25519"
RSA = "ssh-rsa"
RSA_BITS = 3072
# Each algorithm's private key file in the workspace (the public key adds ".pub").
KEY_FILES = {ED25519: "keys/id_ed25519", RSA: "keys/id_rsa"}
PRIVATE_KEY = KEY_FILES[ED25519]


def private_key_path(workspace: Path, algorithm: str = ED25519) -> Path:
    return workspace / KEY_FILES[algorithm]


def public_key(workspace: Path, algorithm: str = ED25519) -> str | None:
    """The workspace's public key line of ``algorithm`` (its target's: the one its stack
    was given); None: none yet."""
    public = private_key_path(workspace, algorithm).with_suffix(".pub")
    return (public.read_text().strip() or None) if public.is_file() else None


def seed_public_key(workspace: Path, line: str) -> None:
    """A workspace that gives its stack ``line`` as the cluster's public key, for a plan
    away from the cluster's own workspace (a teammate's, a CI job's): the public key
    recorded in the state, beside an empty stand-in for the private key it has not got.
    Only for throwaway workspaces: nothing can log in with it."""
    for name in KEY_FILES.values():
        private = workspace / name
        private.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        private.touch(mode=0o600)
        private.with_suffix(".pub").write_text(line + "\n")


def ensure_key_pair(workspace: Path, algorithm: str = ED25519) -> str:
    """Create the cluster's key pair of ``algorithm`` once; return the OpenSSH public
    key line."""
    import asyncssh

    private = private_key_path(workspace, algorithm)
    public = private.with_suffix(".pub")
    if private.exists() and public.exists():
        return public.read_text().strip()
    private.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    options = {"key_size": RSA_BITS} if algorithm == RSA else {}
    key = asyncssh.generate_private_key(algorithm, comment=f"skyc-{workspace.name}",
                                        **options)
    fd = os.open(private, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(key.export_private_key("openssh"))
    os.chmod(private, 0o600)
    line: str = key.export_public_key("openssh").decode().strip()
    public.write_text(line + "\n")
    return line
