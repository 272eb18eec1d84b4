"""Which nodes of a cluster are new, and what waiting for them means.

A node is new from the moment apply (or start) writes the cluster's ``cluster.json``
until a connection finds it up (SSH answers and, where the target runs skyc's
bootstrap, the bootstrap has finished). ``<workspace>/booted.json`` records the nodes
found up, with the ``cluster.json`` they were found up for: a new apply or start
makes every node new again. New nodes are waited for up to ``provision.boot_timeout``
(a new 8-GPU host or TPU VM takes minutes); nodes of a running cluster get the short
timeout of their caller, so a dead node is reported in seconds, not minutes.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skyc.errors import Interrupted, TransportError, UnsupportedFeature
from skyc.model.nodes import CLUSTER_FILE, ClusterInfo

BOOT_RECORD = "booted.json"
# The file skyc's bootstrap writes last, in the SSH user's home (see
# skyc/templates/node_bootstrap.sh.j2): python3, the user and ~/.skyc are in place.
READY_MARKER = ".skyc/ready"

WaitCallback = Callable[[str], None]  # a line of progress: "waiting for SSH on node head (5s)"


def elapsed(seconds: float) -> str:
    """``5s``, ``2m10s``, ``1h05m``."""
    s = int(seconds)
    if s < 60:
        return f"{s}s" if s else f"{seconds:.2g}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


@dataclass
class BootWait:
    """How a session waits for a cluster's new nodes, and which are still awaited."""

    cluster: str
    workspace: Path
    stamp: int | None          # the cluster.json the new nodes belong to (its mtime)
    timeout: float             # seconds each new node has, from the start of the wait
    fresh: frozenset[str]      # the new nodes, by name
    bootstrap: bool            # the nodes run skyc's bootstrap: wait for its marker too
    owned: bool                # the target created the nodes (they bill while they run)
    on_wait: WaitCallback | None = None
    waiting: dict[str, str] = field(default_factory=dict)  # node -> what it waits for

    def report(self, line: str) -> None:
        if self.on_wait is not None:
            self.on_wait(line)

    def _next_steps(self) -> str:
        name = self.cluster
        retry = f"retry with `skyc apply` (or `skyc exec {name} ...`) once they answer"
        if self.owned:
            return (f"take it down with `skyc down {name}`, or {retry}; "
                    "provision.boot_timeout in the config sets how long new nodes have")
        return (f"check that those machines are on and run sshd, then {retry}; "
                f"`skyc down {name}` forgets the cluster")

    def _still_up(self) -> str:
        if self.owned:
            return "it is still running (and billing)"
        return "it keeps its machines"

    def never_up(self, why: dict[str, str]) -> TransportError:
        """The error for nodes that did not come up in time (``why``: node -> reason)."""
        word = "node" if len(why) == 1 else "nodes"
        details = "; ".join(f"{n}: {w}" for n, w in why.items())
        return TransportError(
            f"cluster {self.cluster}: {word} {', '.join(why)} did not come up within "
            f"{elapsed(self.timeout)} ({details}); {self._still_up()}",
            hint=self._next_steps())

    def interrupted(self) -> Interrupted:
        """The error for Ctrl-C while nodes were still awaited."""
        names = sorted(self.waiting)
        details = "; ".join(f"{n}: {self.waiting[n]}" for n in names)
        return Interrupted(
            f"interrupted while waiting for new nodes of cluster {self.cluster}: "
            f"{', '.join(names)} not up yet ({details}); {self._still_up()}",
            hint=self._next_steps())


def _stamp(workspace: Path) -> int | None:
    try:
        return (workspace / CLUSTER_FILE).stat().st_mtime_ns
    except OSError:
        return None


def _seen(workspace: Path, stamp: int | None) -> set[str]:
    """The nodes found up since ``cluster.json`` was written (stamp: its mtime)."""
    try:
        record: Any = json.loads((workspace / BOOT_RECORD).read_text())
    except (OSError, ValueError):
        return set()
    if not isinstance(record, dict) or record.get("cluster_file") != stamp:
        return set()
    return {str(n) for n in record.get("nodes") or []}


def mark_booted(wait: BootWait, names: Iterable[str]) -> None:
    """Record that the nodes ``names`` were found up (later sessions do not wait)."""
    up = set(names)
    if wait.stamp is None or not up:
        return
    nodes = sorted(_seen(wait.workspace, wait.stamp) | up)
    path = wait.workspace / BOOT_RECORD
    tmp = path.with_name(f".{BOOT_RECORD}.{os.getpid()}")
    with contextlib.suppress(OSError):  # only a record: the next session waits again
        tmp.write_text(json.dumps({"cluster_file": wait.stamp, "nodes": nodes}) + "\n")
        os.replace(tmp, path)


def _creates_resources(cloud: str) -> bool:
    from skyc.compiler import capabilities

    try:
        return capabilities(cloud).creates_resources
    except UnsupportedFeature:
        return False


def plan_boot(cluster: ClusterInfo, on_wait: WaitCallback | None = None, *,
              timeout: float | None = None, every_node: bool = False) -> BootWait | None:
    """How to wait for the cluster's new nodes (all its nodes with ``every_node``);
    None when none is new. ``timeout`` defaults to ``provision.boot_timeout``. Nodes
    that are processes of this machine (``local``) have nothing to boot.

    Nodes reached over SSH on a target that creates its nodes (a cloud's VMs, which run
    skyc's bootstrap as their user data or startup script) are waited for until that
    bootstrap has written its marker, not only until sshd answers."""
    workspace = Path(cluster.workspace)
    remote = {n.name for n in cluster.nodes if n.transport != "local"}  # local: no boot
    stamp = _stamp(workspace) if remote else None
    if every_node:
        fresh = remote
    elif stamp is None:
        return None  # not provisioned by skyc here (a ClusterInfo made by its caller)
    else:
        fresh = remote - _seen(workspace, stamp)
    if not fresh:
        return None
    if timeout is None:
        from skyc.settings.config import load_config

        timeout = load_config().provision.boot_timeout
    owned = _creates_resources(cluster.cloud)
    bootstrap = owned and any(n.transport == "ssh" for n in cluster.nodes)
    return BootWait(cluster=cluster.name, workspace=workspace, stamp=stamp,
                    timeout=timeout, fresh=frozenset(fresh), bootstrap=bootstrap,
                    owned=owned, on_wait=on_wait)
