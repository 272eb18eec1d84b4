"""A cluster session: one transport and agent per node, connected in parallel, reused.

Each node's transport comes from the registry in :mod:`skyc.runtime.transport`."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from skyc.errors import TransportError
from skyc.model.nodes import ClusterInfo, Node
from skyc.runtime.remote import NodeAgent
from skyc.runtime.transport import agent_python
from skyc.runtime.transport import make_transport as make_transport  # callers import it here

if TYPE_CHECKING:
    from skyc.runtime.boot_record import BootWait


def node_phase_log(node: Node, job_id: int, phase: str) -> Path | None:
    """The node's own log of a job's phase when it is a file on this machine (a local
    node: the agent's ``~/.skyc/jobs/<job>/<phase>.log`` under its directory); None
    for a remote node."""
    if node.transport != "local" or not node.node_dir:
        return None
    return Path(node.node_dir) / ".skyc" / "jobs" / str(job_id) / f"{phase}.log"


class ClusterSession:
    """Connects to every node of a cluster and makes sure the agent is there."""

    def __init__(self, cluster: ClusterInfo, *, connect_timeout: float = 10.0,
                 num_nodes: int | None = None) -> None:
        """``num_nodes``: use only the first nodes by rank (a job smaller than its cluster)."""
        if not cluster.nodes:
            raise TransportError(f"cluster {cluster.name} has no nodes")
        self.nodes = sorted(cluster.nodes, key=lambda n: n.rank)[:num_nodes]
        self.cluster = cluster.model_copy(update={"nodes": self.nodes})
        self.workspace = Path(cluster.workspace)
        self.agents = [NodeAgent(make_transport(n, self.workspace, connect_timeout),
                                 agent_python(n)) for n in self.nodes]
        self.facts: dict[str, dict[str, Any]] = {}

    @property
    def head(self) -> NodeAgent:
        return self.agents[0]

    async def open(self, timeout: float, *, facts: bool = False,
                   boot: BootWait | None = None) -> None:
        """Connect to every node (retrying up to ``timeout`` s; new nodes as ``boot``
        says) and make sure the agent is there; with ``facts``, also collect each
        node's facts (accelerators, Python)."""
        if boot is not None:
            await self.connect(timeout, boot)

        async def one(agent: NodeAgent) -> None:
            await agent.transport.connect(timeout)
            if facts:
                self.facts[agent.name] = await agent.facts()
            else:
                await agent.ensure()

        results = await asyncio.gather(*(one(a) for a in self.agents), return_exceptions=True)
        await self._raise_first(results)

    async def connect(self, timeout: float, boot: BootWait | None = None) -> None:
        """Connect to every node (retrying up to ``timeout`` s; the new nodes ``boot``
        names up to its own timeout, until they have booted); see :meth:`ensure`."""
        if boot is not None:
            from skyc.runtime.boot import boot_all

            try:
                await boot_all(self.agents, boot, timeout)
            except BaseException:
                await asyncio.shield(self.close())
                raise
            return
        results = await asyncio.gather(*(a.transport.connect(timeout) for a in self.agents),
                                       return_exceptions=True)
        await self._raise_first(results)

    async def ensure(self, probes: Mapping[str, str] | None = None,
                     new_job: tuple[str, int] | None = None) -> int | None:
        """After :meth:`connect`: make sure the agent is on every node, asking ``probes``
        on each, and with ``new_job`` (name, number of nodes) allocate the job's id on
        the head in the same round trip (returned). When a node fails, a job id already
        allocated is aborted on the head before the error is raised."""
        results = await asyncio.gather(
            *(a.ensure(probes, new_job if a is self.head else None) for a in self.agents),
            return_exceptions=True)
        job_id = results[0]
        if isinstance(job_id, int) and any(isinstance(r, BaseException) for r in results):
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.head.cancel(job_id, "abort"), 8)
        await self._raise_first(results)
        return job_id if isinstance(job_id, int) else None

    async def _raise_first(self, results: list[Any]) -> None:
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:
            await self.close()
            raise errors[0]

    async def close(self) -> None:
        await asyncio.gather(*(a.transport.close() for a in self.agents),
                             return_exceptions=True)

    async def __aenter__(self) -> ClusterSession:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.close()
