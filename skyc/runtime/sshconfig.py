"""``ssh CLUSTER`` from any terminal: an OpenSSH config file for skyc's clusters.

``$SKYC_HOME/ssh/config`` holds one ``Host`` entry per SSH node of every cluster
(``<cluster>`` for the head, ``<cluster>-<node>`` for the others) with the node's
address, user and key, and the host key skyc pinned on its first connection
(``UserKnownHostsFile`` is the cluster's ``known_hosts``, and any other key is
refused). skyc rewrites it after each apply and destroy. ``~/.ssh/config`` is
changed only when asked (``skyc ssh-config --install``): one ``Include`` line at
its top. Nothing here prints.
"""

from __future__ import annotations

import os
from pathlib import Path

from skyc.model.nodes import ClusterInfo

INCLUDE_MARK = "# added by skyc ssh-config --install"


def _quote(value: str) -> str:
    return f'"{value}"' if any(c.isspace() for c in value) else value


def _key(workspace: Path, identity: str | None) -> str | None:
    if identity:
        return str(Path(identity).expanduser())
    from skyc.runtime.ssh import DEFAULT_KEY_NAMES

    found = [workspace / n for n in DEFAULT_KEY_NAMES if (workspace / n).exists()]
    return str(found[0]) if found else None


def host_entries(cluster: ClusterInfo) -> list[str]:
    """The ``Host`` blocks of one cluster's SSH nodes (none for local or pod nodes)."""
    workspace = Path(cluster.workspace)
    blocks = []
    for node in sorted(cluster.nodes, key=lambda n: n.rank):
        if node.transport != "ssh" or not node.host:
            continue
        alias = cluster.name if node.rank == 0 else f"{cluster.name}-{node.name}"
        lines = [f"Host {alias}", f"  HostName {node.host}", f"  Port {node.port}"]
        if node.user:
            lines.append(f"  User {node.user}")
        if node.proxy_command:  # OpenSSH fills in %h, %p and %r itself
            lines.append(f"  ProxyCommand {node.proxy_command}")
        key = _key(workspace, node.identity_file)
        if key:
            lines += [f"  IdentityFile {_quote(key)}", "  IdentitiesOnly yes"]
        lines += [f"  UserKnownHostsFile {_quote(str(workspace / 'known_hosts'))}",
                  "  StrictHostKeyChecking yes", "  LogLevel ERROR"]
        blocks.append("\n".join(lines))
    return blocks


def config_text(clusters: list[ClusterInfo]) -> str:
    blocks = [b for c in sorted(clusters, key=lambda c: c.name) for b in host_entries(c)]
    head = "# skyc's clusters; written by skyc after apply and destroy, do not edit\n"
    return head + "".join(f"\n{b}\n" for b in blocks)


def known_clusters(home: Path) -> list[ClusterInfo]:
    """Every cluster with a ``cluster.json`` under ``home``/clusters (unreadable ones skipped)."""
    from pydantic import ValidationError

    out = []
    for path in sorted((home / "clusters").glob("*/cluster.json")):
        try:
            out.append(ClusterInfo.model_validate_json(path.read_text()))
        except (OSError, ValidationError):
            continue
    return out


def config_path(home: Path) -> Path:
    return home / "ssh" / "config"


def write_config(home: Path) -> Path:
    """(Re)write ``home``/ssh/config for every cluster; returns its path."""
    path = config_path(home)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".config.{os.getpid()}.tmp")
    tmp.write_text(config_text(known_clusters(home)))
    tmp.chmod(0o600)
    tmp.replace(path)
    return path


def include_line(path: Path) -> str:
    return f"Include {_quote(str(path))}"


def install_include(user_home: Path, path: Path) -> bool:
    """Put ``Include <path>`` at the top of ``user_home``/.ssh/config (created when
    missing). False when it is already there."""
    ssh_dir = user_home / ".ssh"
    ssh_dir.mkdir(mode=0o700, exist_ok=True)
    config = ssh_dir / "config"
    text = config.read_text() if config.exists() else ""
    line = include_line(path)
    if any(existing.strip() == line for existing in text.splitlines()):
        return False
    tmp = ssh_dir / f".config.{os.getpid()}.tmp"
    tmp.write_text(f"{INCLUDE_MARK}\n{line}\n\n{text}")
    tmp.chmod(0o600)
    tmp.replace(config)
    return True
