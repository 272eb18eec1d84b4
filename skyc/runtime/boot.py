"""Waiting for a cluster's new nodes: SSH answering, then skyc's bootstrap finished.

Each new node has ``BootWait.timeout`` seconds from the start of the wait. Attempts
that a booting node fails (refused, timed out, no route) are retried about every
second; a key the server keeps refusing, or a changed host key, ends the wait at
once. Progress goes to ``BootWait.on_wait`` per node, about every 10 s while it
waits. Nodes that are not new get the caller's short timeout. See
:mod:`skyc.runtime.boot_record` for which nodes are new.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from skyc.errors import TransportError
from skyc.runtime.boot_record import READY_MARKER, BootWait, elapsed, mark_booted
from skyc.runtime.ssh import SshTransport, Unreachable

if TYPE_CHECKING:
    from skyc.runtime.remote import NodeAgent
    from skyc.runtime.transport import Transport

T = TypeVar("T")

# A refused key is retried this long on a new node: a cloud's agent may install the
# user's key a little after sshd starts. A wrong key fails after it, not after minutes.
AUTH_GRACE_S = 60.0
MARKER_TEST = f'test -e "$HOME/{READY_MARKER}"'
MARKER_POLL_S = 0.5
PROGRESS_FIRST_S = 1.0   # a node that answers within this says nothing
PROGRESS_EVERY_S = 10.0
_TICK_S = 0.25

SSH, BOOTING, STARTING = "ssh", "booting", "starting"


class _NotUp(Exception):
    """The node's deadline passed."""


@dataclass
class _NodeWait:
    """One new node's wait: what it waits for, since when, and the last failure."""

    wait: BootWait
    name: str
    started: float
    phase: str
    reason: str = ""

    def retrying(self, reason: str) -> None:
        self.reason = reason
        self.wait.waiting[self.name] = self.why()

    def enter(self, phase: str) -> None:
        self.phase, self.reason = phase, ""
        self.wait.waiting[self.name] = self.why()

    def message(self, now: float) -> str:
        took = elapsed(now - self.started)
        if self.phase == BOOTING:
            return f"waiting for node {self.name} to finish booting ({took})"
        if self.phase == STARTING:
            return f"waiting for node {self.name} to start ({took})"
        last = f", last: {self.reason}" if self.reason else ""
        return f"waiting for SSH on node {self.name} ({took}{last})"

    def why(self) -> str:
        """What the node has not done yet, for an error."""
        if self.phase == BOOTING:
            return f"SSH answers, but its bootstrap has not written ~/{READY_MARKER} yet"
        if self.phase == STARTING:
            return self.reason or "not started"
        return f"cannot connect over SSH: {self.reason or 'no answer yet'}"

    async def report(self) -> None:
        """Progress while the node is awaited: once it has taken PROGRESS_FIRST_S, at
        each change of phase and every PROGRESS_EVERY_S."""
        said: tuple[str, float] | None = None
        while True:
            await asyncio.sleep(_TICK_S)
            now = time.monotonic()
            if now - self.started < PROGRESS_FIRST_S:
                continue
            if said is None or said[0] != self.phase or now - said[1] >= PROGRESS_EVERY_S:
                self.wait.report(self.message(now))
                said = (self.phase, now)


async def _reach(transport: Transport, deadline: float, node: _NodeWait) -> None:
    if isinstance(transport, SshTransport):
        try:
            await transport.reach(deadline, auth_grace=AUTH_GRACE_S, on_retry=node.retrying)
        except Unreachable as exc:
            node.reason = exc.reason
            raise _NotUp from None
        return
    try:  # a pod: its transport waits until it runs
        await transport.connect(max(0.0, deadline - time.monotonic()))
    except TransportError as exc:
        if time.monotonic() < deadline:
            raise
        node.reason = str(exc)
        raise _NotUp from None


async def _await_marker(transport: SshTransport, deadline: float, node: _NodeWait) -> None:
    """Until the bootstrap's marker is on the node (the connection may drop meanwhile:
    cloud-init restarts sshd; it is made again)."""
    while True:
        await _reach(transport, deadline, node)
        remaining = deadline - time.monotonic()
        try:
            res = await transport.run(MARKER_TEST, timeout=max(1.0, min(15.0, remaining)))
            if res.exit_code == 0:
                return
        except TransportError as exc:
            node.reason = str(exc)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise _NotUp
        await asyncio.sleep(min(MARKER_POLL_S, remaining))


async def _boot_one(agent: NodeAgent, wait: BootWait, deadline: float) -> str | None:
    """Wait for one new node; None once it is up, else why it is not (deadline passed)."""
    transport = agent.transport
    node = _NodeWait(wait, agent.name, time.monotonic(), STARTING)
    node.enter(SSH if isinstance(transport, SshTransport) else STARTING)
    ticker = asyncio.ensure_future(node.report())
    try:
        await _reach(transport, deadline, node)
        if wait.bootstrap and isinstance(transport, SshTransport):
            node.enter(BOOTING)
            await _await_marker(transport, deadline, node)
    except _NotUp:
        return node.why()
    finally:
        ticker.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await ticker
    wait.waiting.pop(agent.name, None)
    return None


async def boot_all(agents: list[NodeAgent], wait: BootWait, connect_timeout: float) -> None:
    """Connect to every node: the new ones as :class:`BootWait` says, the others within
    ``connect_timeout``. Records the new nodes found up; raises one error naming every
    node that did not come up in time, or the first other error (the rest stop)."""
    deadline = time.monotonic() + wait.timeout

    async def one(agent: NodeAgent) -> str | None:
        if agent.name in wait.fresh:
            return await _boot_one(agent, wait, deadline)
        await agent.transport.connect(connect_timeout)
        return None

    tasks = [asyncio.ensure_future(one(a)) for a in agents]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    ended = {a.name: t for a, t in zip(agents, tasks, strict=True) if not t.cancelled()}
    mark_booted(wait, [n for n, t in ended.items()
                       if n in wait.fresh and t.exception() is None and t.result() is None])
    for task in ended.values():
        error = task.exception()
        if error is not None:
            raise error
    why = {n: str(t.result()) for n, t in ended.items() if t.result() is not None}
    if why:
        raise wait.never_up(why)


def run_waiting(main: Coroutine[Any, Any, T], wait: BootWait | None) -> T:
    """``asyncio.run(main)``; Ctrl-C while new nodes were awaited becomes an error that
    says which and what to do about the cluster (still running)."""
    try:
        return asyncio.run(main)
    except KeyboardInterrupt:
        if wait is not None and wait.waiting:
            raise wait.interrupted() from None
        raise
