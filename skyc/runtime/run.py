"""Running a job on a cluster: sync, setup and run on its nodes, streaming their output.

asyncio inside, plain functions outside. Queue, logs, cancel and stop-all are in
:mod:`skyc.runtime.control`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

from skyc.errors import RuntimeAgentError, SkycError
from skyc.model.nodes import ClusterInfo
from skyc.runtime.boot import run_waiting
from skyc.runtime.boot_record import BootWait, WaitCallback, plan_boot
from skyc.runtime.environment import node_env
from skyc.runtime.logs import (
    JobLog,
    LineCallback,
    OutputCallback,
    cluster_log_root,
    update_job_table,
)
from skyc.runtime.mounts import apply_mounts
from skyc.runtime.remote import NodeAgent
from skyc.runtime.session import ClusterSession, node_phase_log
from skyc.runtime.spec import JobResult, JobSpec, NodeResult
from skyc.runtime.sync import SyncCache, id_probes, sync_tree

WORKDIR_TARGET = "~/sky_workdir"
# How long a node of a running cluster has to answer. New nodes (just applied or
# started) have provision.boot_timeout instead: see skyc.runtime.boot_record.
CONNECT_TIMEOUT = 60.0
STOP_GRACE = 20.0
ALLOCATE_LOCK_TIMEOUT = 120.0

StartCallback = Callable[[int, str], None]  # (job id, local log directory)


def _sync_pairs(spec: JobSpec) -> list[tuple[Path, str]]:
    """(local source, node target) of what a job syncs: its workdir, then its mounts."""
    pairs: list[tuple[Path, str]] = []
    if spec.workdir:
        pairs.append((Path(spec.workdir).expanduser(), WORKDIR_TARGET))
    for target, local in sorted(spec.file_mounts.items()):
        pairs.append((Path(local).expanduser(), target))
    return pairs


async def _sync_all(session: ClusterSession, spec: JobSpec) -> None:
    pairs = _sync_pairs(spec)
    if spec.workdir and not pairs[0][0].is_dir():
        raise RuntimeAgentError(f"workdir: {pairs[0][0]} is not a directory")
    cache = SyncCache(session.workspace)
    for path, target in pairs:
        await sync_tree(session.agents, path, target, cache)


async def best_effort_cancel(agent: NodeAgent, job_id: int, reason: str = "user") -> bool:
    with contextlib.suppress(SkycError, OSError, asyncio.TimeoutError):
        return await asyncio.wait_for(agent.cancel(job_id, reason), 8)
    return False


async def all_nodes(agents: list[NodeAgent], job_id: int,
                    start: Callable[[NodeAgent], Awaitable[int]]) -> tuple[
                        list[NodeResult], str | None]:
    """Run ``start`` on every node; at the first failure stop the job everywhere."""
    tasks = {asyncio.ensure_future(start(a)): a for a in agents}
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
                await asyncio.gather(*(best_effort_cancel(tasks[o], job_id, "peer")
                                       for o in pending))
                if results[a.name].exit_code is None:  # lost: its job may still run there
                    await best_effort_cancel(a, job_id)
                deadline = time.monotonic() + STOP_GRACE
    ordered = [results[a.name] for a in agents if a.name in results]
    return ordered, failed


def _task_id(cluster: str, job_id: int) -> str:
    return f"skyc-{time.strftime('%Y-%m-%d-%H-%M-%S', time.gmtime())}_{cluster}_{job_id}"


@contextlib.contextmanager
def _allocation_lock(cluster: str, hold: bool) -> Iterator[None]:
    """Shared with other execs, exclusive with destroy: no job starts on a cluster that
    is being destroyed (destroy ends the jobs that already have an id)."""
    if not hold:
        yield
        return
    from skyc.state.locks import cluster_lock

    with cluster_lock(cluster, timeout=ALLOCATE_LOCK_TIMEOUT, shared=True):
        yield


async def _run_job(cluster: ClusterInfo, spec: JobSpec, sinks: tuple[
        LineCallback | None, OutputCallback | None], rerun_setup: bool, detach: bool,
                   log_dir: Path | None, on_start: StartCallback | None,
                   hold_lock: bool, boot: BootWait | None) -> JobResult:
    session = ClusterSession(cluster, num_nodes=spec.num_nodes)
    await session.connect(CONNECT_TIMEOUT, boot)
    try:
        name = spec.name or "job"
        # One round trip to each node: the agent is there, which trees it holds, and on
        # the head the job's id.
        with _allocation_lock(cluster.name, hold_lock):
            job_id = await session.ensure(id_probes([t for _, t in _sync_pairs(spec)]),
                                          new_job=(name, len(session.agents)))
        assert job_id is not None
        root = cluster_log_root(cluster.name, log_dir)
        entry: dict[str, Any] = {"job_id": job_id, "name": name, "submitted": time.time(),
                                 "num_nodes": len(session.agents), "status": "SYNCING",
                                 "labels": {a.name: a.label for a in session.agents}}
        update_job_table(root, entry)
        log = JobLog(root / str(job_id), *sinks)
        if on_start is not None:
            on_start(job_id, str(log.dir))
        run_started: list[bool] = []
        try:
            result = await _stages(session, spec, job_id, log, rerun_setup, detach,
                                   run_started)
        except BaseException:
            # A failed sync, an error or Ctrl-C. Before its run started, the job is
            # aborted on every node (never left PENDING); a started run keeps running.
            if not run_started:
                update_job_table(root, {**entry, "status": "FAILED"})
                await asyncio.shield(asyncio.gather(
                    *(best_effort_cancel(a, job_id, "abort") for a in session.agents)))
            raise
        finally:
            log.close()
        update_job_table(root, {**entry, "status": result.status, **_exit_code(result)})
        return result
    finally:
        await session.close()


def _exit_code(result: JobResult) -> dict[str, int]:
    """``{"exit_code": N}`` for a job that has ended, kept in the job table (read once
    the cluster is down); nothing while it runs."""
    return {} if result.status == "RUNNING" else {"exit_code": result.exit_code}


async def _stages(session: ClusterSession, spec: JobSpec, job_id: int, log: JobLog,
                  rerun_setup: bool, detach: bool, run_started: list[bool]) -> JobResult:
    cluster = session.cluster
    task_id = _task_id(cluster.name, job_id)
    cwd = WORKDIR_TARGET if spec.workdir else "~"
    await _sync_all(session, spec)
    if spec.buckets:
        await apply_mounts(session.agents, spec, job_id)

    def phase(name: str, command: str, follow: bool,
              setup_hash: str = "") -> Callable[[NodeAgent], Awaitable[int]]:
        async def start(agent: NodeAgent) -> int:
            env = node_env(cluster, agent.transport.node, spec, task_id, name)
            node = agent.transport.node
            out = log.sink(agent.name, agent.label, name, node_phase_log(node, job_id, name))
            try:
                return await agent.run_phase(
                    job_id, name, command, env, cwd, follow=follow, setup_hash=setup_hash,
                    force=rerun_setup, on_stdout=out.feed)
            finally:
                out.flush()
        return start

    def result(status: str, nodes: list[NodeResult], failed: str | None) -> JobResult:
        return JobResult(cluster=cluster.name, job_id=job_id, status=status, nodes=nodes,
                         failed_node=failed, log_dir=str(log.dir))

    digest = hashlib.sha256(spec.setup.encode()).hexdigest()[:32] if spec.setup else ""
    agents = session.agents
    if spec.setup and (rerun_setup or any(a.setup_hash != digest for a in agents)):
        nodes, failed = await all_nodes(agents, job_id, phase("setup", spec.setup, True,
                                                               digest))
        if failed:
            return result("FAILED_SETUP", nodes, failed)
    command = spec.run or "true"
    run_started.append(True)
    if detach:
        nodes, failed = await all_nodes(agents, job_id, phase("run", command, False))
        return result("FAILED" if failed else "RUNNING", nodes, failed)
    nodes, failed = await all_nodes(agents, job_id, phase("run", command, True))
    if failed and any(a.cancelled.get(job_id) == "user" for a in agents):
        return result("CANCELLED", nodes, failed)  # `skyc cancel` while it was followed
    return result("FAILED" if failed else "SUCCEEDED", nodes, failed)


def run_job(
    cluster: ClusterInfo,
    spec: JobSpec,
    *,
    on_line: LineCallback | None = None,
    on_output: OutputCallback | None = None,
    rerun_setup: bool = False,
    detach: bool = False,
    log_dir: Path | None = None,
    on_start: StartCallback | None = None,
    hold_lock: bool = False,
    on_wait: WaitCallback | None = None,
) -> JobResult:
    """Sync the workdir and file mounts, copy or mount the buckets, run setup (when
    changed), then run, on the first ``spec.num_nodes`` nodes (all by default).

    Output goes to ``on_output`` as bytes, each line prefixed with its node's label
    (``(head, rank=0) ...``), and/or to ``on_line(label, line)`` decoded line by line.
    Each node's output is saved once, as ``$SKYC_HOME/logs/<cluster>/<job_id>/<node>.log``
    (run) and ``<node>.setup.log`` (a hard link to a local node's own log of the phase)
    (``log_dir`` replaces ``$SKYC_HOME/logs/<cluster>``). ``on_start(job_id, log_dir)``
    is called as soon as the job has its id. With ``hold_lock`` the id is allocated under
    the cluster's shared lock (so not while the cluster is being destroyed). A failed job
    is returned with ``status`` FAILED / FAILED_SETUP; ``raise_for_status()`` raises.

    Nodes new since the cluster was applied or started are waited for up to
    ``provision.boot_timeout`` (SSH, then the bootstrap's marker on a cloud's VMs), with
    a line of progress per waiting node to ``on_wait``; a node that does not come up,
    or Ctrl-C meanwhile, raises an error saying which and how to retry or take the
    cluster down. Other nodes have ``CONNECT_TIMEOUT`` s.
    """
    boot = plan_boot(cluster, on_wait)
    return run_waiting(_run_job(cluster, spec, (on_line, on_output), rerun_setup, detach,
                                log_dir, on_start, hold_lock, boot), boot)
