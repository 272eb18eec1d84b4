"""Who a cluster belongs to, and the short hash of it that names on a cloud carry.

The owner is the config's ``user:``, else ``user@host`` (the login name and the short
host name). It is recorded with a cluster when the cluster is created and fixed for
its life (:mod:`skyc.model.workspace`); its hash (:func:`owner_hash`, four hex
digits as SkyPilot's ``make_cluster_name_on_cloud`` adds) goes into every name the
cluster's stack gives a cloud resource, so people sharing an account or a project
never collide, and every resource is labelled with the owner itself.
"""

from __future__ import annotations

import getpass
import hashlib
import os
import re
import socket
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from skyc.settings.config import SkycConfig

OWNER_LABEL = "skyc-owner"
HASH_LENGTH = 4
MAX_OWNER = 128
# What an owner may hold: the config's ``user:`` takes the same characters.
OWNER_PATTERN = re.compile(r"^[A-Za-z0-9._@+-]{1,128}$")
_NOT_OWNER = re.compile(r"[^A-Za-z0-9._@+-]+")


def _login() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no login name in the environment nor a passwd entry
        return f"uid{os.getuid()}"


def default_owner() -> str:
    """``user@host`` for this machine, in the characters an owner may hold."""
    host = socket.gethostname().split(".")[0] or "localhost"
    raw = f"{_login()}@{host}"
    return _NOT_OWNER.sub("-", raw).strip("-")[:MAX_OWNER] or "user"


def owner(config: SkycConfig) -> str:
    """The owner of the clusters ``config`` creates: its ``user:``, else user@host."""
    return config.user or default_owner()


def owner_hash(name: str) -> str:
    """A short lower-case hex hash of an owner, for names on a cloud."""
    return hashlib.sha256(name.encode()).hexdigest()[:HASH_LENGTH]


def user_part(name: str) -> str:
    """The owner's user (what comes before ``@``) as lower-case letters, digits and '-'."""
    return re.sub(r"[^a-z0-9-]+", "-", name.split("@")[0].lower()).strip("-")


__all__ = ["HASH_LENGTH", "OWNER_LABEL", "OWNER_PATTERN", "default_owner", "owner",
           "owner_hash", "user_part"]
