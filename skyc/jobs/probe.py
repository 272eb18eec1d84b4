"""What became of a managed job's run on its cluster, read from every node's agent.

A program that exits has an exit code on its node. A node that is lost (preempted,
its processes killed, unreachable) leaves none: either it does not answer, or its
agent reports the run ended without one. That difference is what separates a failure
of the user's program (restarts) from the loss of a node (recovery).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Literal

from skyc.errors import SkycError
from skyc.model.nodes import ClusterInfo

State = Literal["running", "succeeded", "failed", "failed_setup", "lost", "cancelled"]
PROBE_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Verdict:
    state: State
    why: str
    exit_code: int | None = None
    node: str | None = None


def _node_end(node: str, table: list[dict[str, Any]] | None,
              job_id: int) -> Verdict | dict[str, Any]:
    """A verdict one node settles by itself (lost, setup failed, killed), or its record
    of the job."""
    if table is None:
        return Verdict("lost", f"node {node} does not answer", node=node)
    mine = [j for j in table if j.get("job_id") == job_id]
    if not mine:
        return Verdict("lost", f"node {node} no longer has the job", node=node)
    job = mine[0]
    status, code = job.get("status"), job.get("exit_code")
    if status == "FAILED_SETUP":
        return Verdict("failed_setup", f"setup exited with code {code} on {node}",
                       exit_code=code, node=node)
    if status == "FAILED" and job.get("cancelled") is None and code in (None, 0):
        return Verdict("lost", f"the run on node {node} ended without an exit code "
                       "(its processes were killed)", node=node)
    return job


def _cancelled(reason: Any, node: str) -> Verdict:
    if reason == "user":
        return Verdict("cancelled", f"cancelled on {node}", node=node)
    return Verdict("lost", f"the run on node {node} was stopped ({reason})", node=node)


def _judge(tables: dict[str, list[dict[str, Any]] | None], job_id: int) -> Verdict:
    failed: Verdict | None = None
    cancelled: Verdict | None = None
    running = False
    for node, table in tables.items():
        job = _node_end(node, table, job_id)
        if isinstance(job, Verdict):
            return job
        status, code = job.get("status"), job.get("exit_code")
        if status == "FAILED" and failed is None:
            failed = Verdict("failed", f"the run exited with code {code} on {node}",
                             exit_code=code, node=node)
        elif status == "CANCELLED":
            cancelled = cancelled or _cancelled(job.get("cancelled"), node)
        elif status != "SUCCEEDED":
            running = True
    if failed is not None:
        return failed
    if cancelled is not None:
        return cancelled
    if running:
        return Verdict("running", "running")
    return Verdict("succeeded", "every node exited 0")


async def _tables(cluster: ClusterInfo, job_id: int) -> dict[str, list[dict[str, Any]] | None]:
    from skyc.runtime.session import ClusterSession

    try:
        session = ClusterSession(cluster, connect_timeout=PROBE_TIMEOUT_S)
    except SkycError:
        return {"head": None}
    tables: dict[str, list[dict[str, Any]] | None] = {}

    async def one(agent: Any) -> None:
        try:
            await asyncio.wait_for(agent.transport.connect(PROBE_TIMEOUT_S), PROBE_TIMEOUT_S)
            tables[agent.name] = await asyncio.wait_for(agent.status(), PROBE_TIMEOUT_S)
        except (SkycError, OSError, asyncio.TimeoutError, ValueError):
            tables[agent.name] = None

    try:
        await one(session.head)
        head = tables.get(session.head.name) or []
        mine = [j for j in head if j.get("job_id") == job_id]
        count = (mine[0].get("num_nodes") if mine else None) or len(session.agents)
        await asyncio.gather(*(one(a) for a in session.agents[1:count]))
    finally:
        await session.close()
    return {a.name: tables.get(a.name) for a in session.agents if a.name in tables}


def probe(cluster: ClusterInfo, job_id: int, settle_s: float = 0.3) -> Verdict:
    """The job's state on the cluster. A loss is read twice, ``settle_s`` apart (a
    program that just ended may be having its exit code written)."""
    verdict = _judge(asyncio.run(_tables(cluster, job_id)), job_id)
    if verdict.state == "lost" and settle_s > 0:
        import time

        time.sleep(settle_s)
        verdict = _judge(asyncio.run(_tables(cluster, job_id)), job_id)
    return verdict
