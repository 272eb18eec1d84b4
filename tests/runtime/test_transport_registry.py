"""Transports come from a registry: a name registered there reaches its nodes through
the factory given, with no private function patched."""

from __future__ import annotations

import asyncio
import shlex
import sys
from pathlib import Path

import pytest

from skyc.errors import TransportError
from skyc.model.nodes import ClusterInfo, Node
from skyc.runtime.session import ClusterSession
from skyc.runtime.ssh import SshTransport
from skyc.runtime.transport import (
    CommandResult,
    LocalTransport,
    OutputSink,
    StdinSource,
    Transport,
    make_transport,
    register_transport,
    transport_kind,
    unregister_transport,
)


class Recording:
    """A transport of its own name: the node's commands run as on a local node (a real
    subprocess and the real agent), and each is recorded."""

    def __init__(self, inner: LocalTransport, seen: list[str]) -> None:
        self.inner = inner
        self.node = inner.node
        self.seen = seen

    async def connect(self, timeout: float) -> None:
        await self.inner.connect(timeout)

    async def run(self, command: str, *, stdin: StdinSource = None,
                  on_stdout: OutputSink | None = None,
                  timeout: float | None = None) -> CommandResult:
        self.seen.append(command)
        return await self.inner.run(command, stdin=stdin, on_stdout=on_stdout, timeout=timeout)

    async def close(self) -> None:
        await self.inner.close()


def test_a_registered_transport_reaches_the_sessions_nodes(local_cluster: ClusterInfo) -> None:
    seen: list[str] = []
    made: list[tuple[str, Path, float]] = []

    def factory(node: Node, workspace: Path, connect_timeout: float) -> Transport:
        made.append((node.name, workspace, connect_timeout))
        return Recording(LocalTransport(node), seen)

    python = shlex.quote(sys.executable)
    assert register_transport("recorded", factory, python=python) is None
    try:
        # Node.transport names the built-in transports only: the copy skips validation
        nodes = [n.model_copy(update={"transport": "recorded"}) for n in local_cluster.nodes]
        cluster = local_cluster.model_copy(update={"nodes": nodes})

        async def go() -> dict[str, dict[str, object]]:
            async with ClusterSession(cluster, connect_timeout=7) as session:
                assert all(isinstance(a.transport, Recording) for a in session.agents)
                assert all(a.python == python for a in session.agents)
                await session.open(30, facts=True)
                return dict(session.facts)

        facts = asyncio.run(go())
    finally:
        unregister_transport("recorded")
    assert made == [(n.name, Path(cluster.workspace), 7) for n in cluster.nodes]
    assert sorted(facts) == ["head", "worker1"]
    assert any(f"exec {python} -S -c" in c and c.endswith(" facts") for c in seen), seen


def test_registering_a_name_again_replaces_it_and_returns_what_it_replaced(
        local_cluster: ClusterInfo, tmp_path: Path) -> None:
    node = local_cluster.nodes[0]
    assert isinstance(make_transport(node, tmp_path, 5), LocalTransport)
    previous = register_transport("local", lambda n, w, t: Recording(LocalTransport(n), []))
    try:
        assert isinstance(make_transport(node, tmp_path, 5), Recording)
    finally:
        assert previous is not None
        register_transport("local", previous.factory, python=previous.python)
    assert isinstance(make_transport(node, tmp_path, 5), LocalTransport)
    ssh = node.model_copy(update={"transport": "ssh", "host": "127.0.0.1", "user": "u"})
    assert isinstance(make_transport(ssh, tmp_path, 5), SshTransport)
    assert transport_kind(ssh).python == "python3"


def test_a_node_whose_transport_is_not_registered_is_refused(local_cluster: ClusterInfo,
                                                             tmp_path: Path) -> None:
    node = local_cluster.nodes[0].model_copy(update={"transport": "carrier-pigeon"})
    with pytest.raises(TransportError, match="no transport 'carrier-pigeon' is registered "
                       r"\(known: kubernetes, local, ssh\)"):
        ClusterSession(local_cluster.model_copy(update={"nodes": [node]}))
    with pytest.raises(TransportError, match="carrier-pigeon"):
        make_transport(node, tmp_path, 5)
