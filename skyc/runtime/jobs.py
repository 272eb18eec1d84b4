"""Jobs on a cluster: sync, setup and run on every node; queue, logs, cancel.

asyncio inside, plain functions outside.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from skyc.errors import RuntimeAgentError, SkycError
from skyc.nodes import ClusterInfo
from skyc.runtime.environment import node_env
from skyc.runtime.logs import JobLog, LineCallback, cluster_log_root, update_job_table
from skyc.runtime.remote import NodeAgent
from skyc.runtime.session import ClusterSession
from skyc.runtime.spec import JobResult, JobSpec, NodeResult
from skyc.runtime.sync import SyncCache, sync_tree

WORKDIR_TARGET = "~/sky_workdir"
CONNECT_TIMEOUT = 60.0
STOP_GRACE = 20.0


async def _sync_all(session: ClusterSession, spec: JobSpec) -> None:
    pairs: list[tuple[Path, str]] = []
    if spec.workdir:
        workdir = Path(spec.workdir).expanduser()
        if not workdir.is_dir():
            raise RuntimeAgentError(f"workdir: {workdir} is not a directory")
        pairs.append((workdir, WORKDIR_TARGET))
    for target, local in sorted(spec.file_mounts.items()):
        pairs.append((Path(local).expanduser(), target))
    cache = SyncCache(session.workspace)
    for path, target in pairs:
        await sync_tree(session.agents, path, target, cache)


async def _best_effort_cancel(agent: NodeAgent, job_id: int) -> bool:
    with contextlib.suppress(SkycError, OSError, asyncio.TimeoutError):
        return await asyncio.wait_for(agent.cancel(job_id), 8)
    return False


async def _all_nodes(session: ClusterSession, job_id: int,
                     start: Callable[[NodeAgent], Awaitable[int]]) -> tuple[
                         list[NodeResult], str | None]:
    """Run ``start`` on every node; at the first failure stop the job everywhere."""
    tasks = {asyncio.ensure_future(start(a)): a for a in session.agents}
    results: dict[str, NodeResult] = {}
    failed: str | None = None
    pending = set(tasks)
    deadline: float | None = None
    while pending:
        timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
        done, pending = await asyncio.wait(pending, timeout=timeout,
                                           return_when=asyncio.FIRST_COMPLETED)
        if not done:  # nodes that did not stop in time
            for t in pending:
                t.cancel()
                a = tasks[t]
                results[a.name] = NodeResult(node=a.name, rank=a.transport.node.rank,
                                             exit_code=None, error="did not stop when asked")
            break
        for t in done:
            a = tasks[t]
            rank = a.transport.node.rank
            exc = t.exception()
            if exc is not None:
                if not isinstance(exc, SkycError):
                    raise exc
                results[a.name] = NodeResult(node=a.name, rank=rank, exit_code=None,
                                             error=str(exc))
            else:
                results[a.name] = NodeResult(node=a.name, rank=rank, exit_code=t.result())
            if failed is None and results[a.name].exit_code != 0:
                failed = a.name
                await asyncio.gather(*(_best_effort_cancel(tasks[o], job_id)
                                       for o in pending))
                if results[a.name].exit_code is None:  # lost: its job may still run there
                    await _best_effort_cancel(a, job_id)
                deadline = time.monotonic() + STOP_GRACE
    ordered = [results[a.name] for a in session.agents if a.name in results]
    return ordered, failed


def _task_id(cluster: str, job_id: int) -> str:
    return f"skyc-{time.strftime('%Y-%m-%d-%H-%M-%S', time.gmtime())}_{cluster}_{job_id}"


async def _run_job(cluster: ClusterInfo, spec: JobSpec, on_line: LineCallback | None,
                   rerun_setup: bool, detach: bool, log_dir: Path | None) -> JobResult:
    session = ClusterSession(cluster)
    await session.open(CONNECT_TIMEOUT)
    try:
        name = spec.name or "job"
        job_id = await session.head.new_job(name, len(session.agents))
        root = cluster_log_root(cluster.name, log_dir)
        entry: dict[str, Any] = {"job_id": job_id, "name": name, "submitted": time.time(),
                                 "num_nodes": len(session.agents), "status": "SYNCING"}
        update_job_table(root, entry)
        log = JobLog(root / str(job_id), on_line)
        try:
            result = await _stages(session, spec, job_id, log, rerun_setup, detach)
        except BaseException:
            update_job_table(root, {**entry, "status": "FAILED"})
            raise
        finally:
            log.close()
        update_job_table(root, {**entry, "status": result.status})
        return result
    finally:
        await session.close()


async def _stages(session: ClusterSession, spec: JobSpec, job_id: int, log: JobLog,
                  rerun_setup: bool, detach: bool) -> JobResult:
    cluster = session.cluster
    task_id = _task_id(cluster.name, job_id)
    cwd = WORKDIR_TARGET if spec.workdir else "~"
    await _sync_all(session, spec)

    def phase(name: str, command: str, follow: bool,
              setup_hash: str = "") -> Callable[[NodeAgent], Awaitable[int]]:
        async def start(agent: NodeAgent) -> int:
            env = node_env(cluster, agent.transport.node, spec, task_id, name)
            payload = {"command": command, "env": env, "cwd": cwd}
            return await agent.run_phase(
                job_id, name, payload, follow=follow, setup_hash=setup_hash,
                force=rerun_setup, on_line=log.sink(agent.name, agent.label))
        return start

    def result(status: str, nodes: list[NodeResult], failed: str | None) -> JobResult:
        return JobResult(cluster=cluster.name, job_id=job_id, status=status, nodes=nodes,
                         failed_node=failed, log_dir=str(log.dir))

    digest = hashlib.sha256(spec.setup.encode()).hexdigest()[:32] if spec.setup else ""
    if spec.setup and (rerun_setup or any(a.setup_hash != digest for a in session.agents)):
        nodes, failed = await _all_nodes(session, job_id, phase("setup", spec.setup, True,
                                                                 digest))
        if failed:
            return result("FAILED_SETUP", nodes, failed)
    command = spec.run or "true"
    if detach:
        nodes, failed = await _all_nodes(session, job_id, phase("run", command, False))
        return result("FAILED" if failed else "RUNNING", nodes, failed)
    nodes, failed = await _all_nodes(session, job_id, phase("run", command, True))
    return result("FAILED" if failed else "SUCCEEDED", nodes, failed)


def run_job(
    cluster: ClusterInfo,
    spec: JobSpec,
    *,
    on_line: LineCallback | None = None,
    rerun_setup: bool = False,
    detach: bool = False,
    log_dir: Path | None = None,
) -> JobResult:
    """Sync the workdir and file mounts, run setup (when changed), then run, on every node.

    ``on_line(label, line)`` receives each output line with its node's label, e.g.
    ``(head, rank=0)``. Logs are also saved under ``$SKYC_HOME/logs/<cluster>/<job_id>/``
    (``log_dir`` replaces ``$SKYC_HOME/logs/<cluster>``). A failed job is returned
    with ``status`` FAILED / FAILED_SETUP; ``JobResult.raise_for_status()`` raises JobFailed.
    """
    return asyncio.run(_run_job(cluster, spec, on_line, rerun_setup, detach, log_dir))


_PRECEDENCE = ("FAILED_SETUP", "FAILED", "CANCELLED", "SETTING_UP", "RUNNING", "SETUP_DONE",
               "PENDING", "SUCCEEDED")


def combine_status(per_node: list[str]) -> str:
    for status in _PRECEDENCE:
        if status in per_node:
            if status == "SETUP_DONE":
                return "RUNNING"
            return status
    return "PENDING"


async def _queue(cluster: ClusterInfo, log_dir: Path | None) -> list[dict[str, Any]]:
    async with ClusterSession(cluster) as session:
        await session.open(CONNECT_TIMEOUT)
        tables = await asyncio.gather(*(a.status() for a in session.agents))
    jobs: list[dict[str, Any]] = []
    for head_job in tables[0]:
        jid = head_job["job_id"]
        per_node = {}
        for agent, table in zip(session.agents, tables, strict=True):
            mine = [j for j in table if j["job_id"] == jid]
            per_node[agent.name] = mine[0]["status"] if mine else "PENDING"
        jobs.append({"job_id": jid, "name": head_job["name"], "submitted": head_job["submitted"],
                     "status": combine_status(list(per_node.values())), "nodes": per_node})
    from skyc.runtime.logs import write_job_table

    write_job_table(cluster_log_root(cluster.name, log_dir), jobs)
    return jobs


def queue(cluster: ClusterInfo, *, log_dir: Path | None = None) -> list[dict[str, Any]]:
    """The cluster's jobs, from the head node's table, with each node's status."""
    return asyncio.run(_queue(cluster, log_dir))


async def _tail(cluster: ClusterInfo, job_id: int | None, follow: bool,
                on_line: LineCallback | None) -> tuple[int, int]:
    async with ClusterSession(cluster) as session:
        await session.open(CONNECT_TIMEOUT)
        table = await session.head.status()
        if job_id is None:
            if not table:
                raise RuntimeAgentError(f"cluster {cluster.name} has no jobs yet")
            job_id = max(j["job_id"] for j in table)
        elif not any(j["job_id"] == job_id for j in table):
            raise RuntimeAgentError(f"cluster {cluster.name} has no job {job_id}",
                                    hint=f"see the jobs with: skyc queue {cluster.name}")
        jid = job_id

        def sink(agent: NodeAgent) -> Callable[[str], None]:
            def emit(line: str) -> None:
                if on_line is not None:
                    on_line(agent.label, line)
            return emit

        codes = await asyncio.gather(*(a.tail(jid, follow, sink(a)) for a in session.agents))
    failing = [c for c in codes if c != 0]
    return jid, (failing[0] if failing else 0)


def tail_logs(cluster: ClusterInfo, job_id: int | None = None, follow: bool = False, *,
              on_line: LineCallback | None = None) -> int:
    """Print a job's logs (the latest job by default) from every node; returns its exit code.

    -1 means the job has not finished (or never started) on some node.
    """
    _, code = asyncio.run(_tail(cluster, job_id, follow, on_line))
    return code


async def _cancel(cluster: ClusterInfo, job_id: int) -> bool:
    async with ClusterSession(cluster) as session:
        await session.open(CONNECT_TIMEOUT)
        table = await session.head.status()
        if not any(j["job_id"] == job_id for j in table):
            raise RuntimeAgentError(f"cluster {cluster.name} has no job {job_id}",
                                    hint=f"see the jobs with: skyc queue {cluster.name}")
        stopped = await asyncio.gather(*(_best_effort_cancel(a, job_id)
                                         for a in session.agents))
    return any(stopped)


def cancel(cluster: ClusterInfo, job_id: int) -> bool:
    """Kill the job's process groups on every node. False when it had already finished."""
    return asyncio.run(_cancel(cluster, job_id))


async def _wait(cluster: ClusterInfo, timeout: float) -> dict[str, dict[str, Any]]:
    async with ClusterSession(cluster) as session:
        await session.open(timeout, facts=True)
        return dict(session.facts)


def wait_for_nodes(cluster: ClusterInfo, timeout: float = 300.0) -> dict[str, dict[str, Any]]:
    """Wait until every node accepts connections and runs the agent; returns node facts
    (detected accelerators, Python version) by node name."""
    return asyncio.run(_wait(cluster, timeout))
