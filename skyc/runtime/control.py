"""Jobs already on a cluster: queue (reconciled), logs, cancel, stop-all, node facts."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from pathlib import Path
from typing import Any

from skyc.errors import RuntimeAgentError, SkycError
from skyc.model.nodes import ClusterInfo
from skyc.runtime.boot import run_waiting
from skyc.runtime.boot_record import BootWait, WaitCallback, plan_boot
from skyc.runtime.logs import (
    LineCallback,
    NodeOutput,
    OutputCallback,
    cluster_log_root,
    write_job_table,
)
from skyc.runtime.run import CONNECT_TIMEOUT, best_effort_cancel
from skyc.runtime.session import ClusterSession

_PRECEDENCE = ("FAILED_SETUP", "FAILED", "CANCELLED", "SETTING_UP", "RUNNING", "SETUP_DONE",
               "PENDING", "SUCCEEDED")
FINAL_STATUSES = frozenset({"SUCCEEDED", "FAILED", "FAILED_SETUP", "CANCELLED"})
_IDLE = frozenset({"PENDING", "SETUP_DONE"})  # nothing of the job is running on that node


def combine_status(per_node: list[str]) -> str:
    for status in _PRECEDENCE:
        if status in per_node:
            if status == "SETUP_DONE":
                return "RUNNING"
            return status
    return "PENDING"


def client_gone(client: Any) -> bool:
    """True when the skyc process that submitted a job ran on this machine and has exited."""
    if not isinstance(client, dict) or client.get("host") != socket.gethostname():
        return False
    pid = client.get("pid")
    if not isinstance(pid, int) or pid <= 0 or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


async def _queue(cluster: ClusterInfo, log_dir: Path | None) -> list[dict[str, Any]]:
    async with ClusterSession(cluster) as session:
        await session.open(CONNECT_TIMEOUT)
        tables = await asyncio.gather(*(a.status() for a in session.agents))
        jobs: list[dict[str, Any]] = []
        for head_job in tables[0]:
            jid = head_job["job_id"]
            count = head_job.get("num_nodes") or len(session.agents)
            per_node = {}
            for agent, table in list(zip(session.agents, tables, strict=True))[:count]:
                mine = [j for j in table if j["job_id"] == jid]
                per_node[agent.name] = mine[0]["status"] if mine else "PENDING"
            status = combine_status(list(per_node.values()))
            if (status not in FINAL_STATUSES and set(per_node.values()) <= _IDLE
                    and client_gone(head_job.get("client"))):
                # Its client died between stages (or before the first): it will never run.
                await asyncio.gather(*(best_effort_cancel(a, jid, "abort")
                                       for a in session.agents[:count]))
                per_node = {n: ("FAILED" if s == "PENDING" else "CANCELLED")
                            for n, s in per_node.items()}
                status = "FAILED"
            jobs.append({"job_id": jid, "name": head_job["name"],
                         "submitted": head_job["submitted"], "status": status,
                         "nodes": per_node})
    return write_job_table(cluster_log_root(cluster.name, log_dir), jobs)


def queue(cluster: ClusterInfo, *, log_dir: Path | None = None) -> list[dict[str, Any]]:
    """The cluster's jobs as its nodes see them, with each node's status.

    A job whose submitting skyc died before its run started is marked FAILED on the
    nodes (it would otherwise stay PENDING or RUNNING forever)."""
    return asyncio.run(_queue(cluster, log_dir))


def job_exit_code(codes: list[tuple[int, bool]]) -> int:
    """A job's code from its nodes' (code, cancelled): the code of a node that failed on
    its own first, not 143 from a node stopped because another failed; -1 while any node
    has not finished."""
    failing = [c for c, cancelled in codes if c not in (0, -1) and not cancelled]
    if failing:
        return failing[0]
    if any(c == -1 for c, _ in codes):
        return -1
    stopped = [c for c, _ in codes if c != 0]
    return stopped[0] if stopped else 0


async def _tail(cluster: ClusterInfo, job_id: int | None, follow: bool,
                sinks: tuple[LineCallback | None, OutputCallback | None],
                connect_timeout: float = CONNECT_TIMEOUT) -> tuple[int, int]:
    async with ClusterSession(cluster, connect_timeout=min(10.0, connect_timeout)) as session:
        await session.open(connect_timeout)
        table = await session.head.status()
        if job_id is None:
            if not table:
                raise RuntimeAgentError(f"cluster {cluster.name} has no jobs yet")
            job_id = max(j["job_id"] for j in table)
        mine = [j for j in table if j["job_id"] == job_id]
        if not mine:
            raise RuntimeAgentError(f"cluster {cluster.name} has no job {job_id}",
                                    hint=f"see the jobs with: skyc queue {cluster.name}")
        jid = job_id
        agents = session.agents[:mine[0].get("num_nodes") or len(session.agents)]

        async def one(agent: Any) -> tuple[int, bool]:
            out = NodeOutput(None, agent.label, sinks[1], sinks[0])
            try:
                result: tuple[int, bool] = await agent.tail(jid, follow, out.feed)
                return result
            finally:
                out.flush()

        codes = await asyncio.gather(*(one(a) for a in agents))
    return jid, job_exit_code(list(codes))


def tail_logs(cluster: ClusterInfo, job_id: int | None = None, follow: bool = False, *,
              on_line: LineCallback | None = None,
              on_output: OutputCallback | None = None,
              connect_timeout: float = CONNECT_TIMEOUT) -> int:
    """Stream a job's logs (the latest job by default) from its nodes; returns the job's
    exit code (see :func:`job_exit_code`): -1 while it has not finished on some node.
    ``connect_timeout`` bounds the wait for nodes that do not answer (booting ones are
    retried that long)."""
    _, code = asyncio.run(_tail(cluster, job_id, follow, (on_line, on_output),
                                connect_timeout))
    return code


async def _cancel(cluster: ClusterInfo, job_id: int) -> bool:
    async with ClusterSession(cluster) as session:
        await session.open(CONNECT_TIMEOUT)
        table = await session.head.status()
        if not any(j["job_id"] == job_id for j in table):
            raise RuntimeAgentError(f"cluster {cluster.name} has no job {job_id}",
                                    hint=f"see the jobs with: skyc queue {cluster.name}")
        stopped = await asyncio.gather(*(best_effort_cancel(a, job_id)
                                         for a in session.agents))
    return any(stopped)


def cancel(cluster: ClusterInfo, job_id: int) -> bool:
    """Stop the job on every node: its process groups and every process it started
    (daemons that left the group included). False when it had already finished."""
    return asyncio.run(_cancel(cluster, job_id))


async def _stop_all(cluster: ClusterInfo, timeout: float) -> dict[str, list[int]]:
    session = ClusterSession(cluster)
    stopped: dict[str, list[int]] = {}

    async def one(agent: Any) -> None:
        with contextlib.suppress(SkycError, OSError, asyncio.TimeoutError):
            await agent.transport.connect(timeout)
            await agent.ensure()
            result = await asyncio.wait_for(agent.stop_all(), 60)
            stopped[agent.name] = list(result.get("stopped") or [])

    try:
        await asyncio.gather(*(one(a) for a in session.agents))
    finally:
        await session.close()
    return stopped


def stop_all_jobs(cluster: ClusterInfo, timeout: float = 10.0) -> dict[str, list[int]]:
    """End every job on every reachable node, with every process the jobs started (before
    the cluster is destroyed). Returns, by node, the ids of the jobs it stopped."""
    return asyncio.run(_stop_all(cluster, timeout))


async def _boot(cluster: ClusterInfo, boot: BootWait) -> None:
    async with ClusterSession(cluster) as session:
        await session.connect(CONNECT_TIMEOUT, boot)


def wait_for_boot(cluster: ClusterInfo, *, on_wait: WaitCallback | None = None) -> None:
    """Wait for the cluster's new nodes (just applied or started) as :func:`run_job`
    does before a job: up to ``provision.boot_timeout``, with progress to ``on_wait``;
    returns at once when no node is new. For an apply that runs no job."""
    boot = plan_boot(cluster, on_wait)
    if boot is not None:
        run_waiting(_boot(cluster, boot), boot)


async def _wait(cluster: ClusterInfo, boot: BootWait | None) -> dict[str, dict[str, Any]]:
    async with ClusterSession(cluster) as session:
        await session.open(CONNECT_TIMEOUT, facts=True, boot=boot)
        return dict(session.facts)


def wait_for_nodes(cluster: ClusterInfo, timeout: float | None = None, *,
                   on_wait: WaitCallback | None = None) -> dict[str, dict[str, Any]]:
    """Wait until every node accepts connections, has booted (a cloud VM: skyc's
    bootstrap has finished) and runs the agent, each for up to ``timeout`` s (default:
    ``provision.boot_timeout``), with progress to ``on_wait``; returns node facts
    (detected accelerators, Python version) by node name."""
    boot = plan_boot(cluster, on_wait, timeout=timeout, every_node=True)
    return run_waiting(_wait(cluster, boot), boot)
