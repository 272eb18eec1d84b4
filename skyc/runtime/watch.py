"""The watcher of a detached job: a background skyc process on the client machine.

It follows the job's run on every node, keeps each node's output in the job's local
log directory (a local node's log is there already, as a hard link: nothing is
written into it), stops the job on the other nodes when one fails (as an attached
run does), and records how the job ended in the state database and the job table.

    python -m skyc.runtime.watch <cluster.json> <job_id> [<job log directory>]
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
from pathlib import Path

from skyc.model.nodes import ClusterInfo
from skyc.runtime.control import _queue
from skyc.runtime.logs import JobLog, OutputCallback, cluster_log_root, record_exit_code
from skyc.runtime.remote import NodeAgent, read_trailer
from skyc.runtime.run import CONNECT_TIMEOUT, all_nodes
from skyc.runtime.session import ClusterSession, node_phase_log


def start_watcher(cluster: ClusterInfo, job_id: int, job_dir: Path | None = None) -> int:
    """Start the watcher of a detached job in its own session; returns its pid.
    ``job_dir``: where the job's logs are (by default, found from the cluster's name)."""
    spec = Path(cluster.workspace) / f"watch-{job_id}.json"
    spec.parent.mkdir(parents=True, exist_ok=True)
    spec.write_text(cluster.model_dump_json())
    where = [str(job_dir)] if job_dir is not None else []
    proc = subprocess.Popen(
        [sys.executable, "-m", "skyc.runtime.watch", str(spec), str(job_id), *where],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True, env={**os.environ, "PYDANTIC_DISABLE_PLUGINS": "1"})
    return proc.pid


async def _follow_run(agent: NodeAgent, job_id: int, on_stdout: OutputCallback) -> int:
    """The run phase's output on one node, to its end (setup's has been kept already,
    by the exec that started the job); returns the run's exit code."""
    res = await agent.call(f"tail {job_id} --phase run --follow", stdin=b"",
                           on_stdout=on_stdout)
    return read_trailer(res, "logs", agent.name)[0]


async def _follow_all(session: ClusterSession, job_id: int, job_dir: Path) -> int | None:
    """Follow the job's run on its nodes, keeping each node's output once; returns the
    job's exit code (the first failing node's; None when that node was lost, -1 when
    its run had not ended)."""
    table = [j for j in await session.head.status() if j["job_id"] == job_id]
    count = (table[0].get("num_nodes") if table else None) or len(session.agents)
    log = JobLog(job_dir, None, None)

    async def follow(agent: NodeAgent) -> int:
        node = agent.transport.node
        out = log.sink(agent.name, agent.label, "run", node_phase_log(node, job_id, "run"))
        try:
            return await _follow_run(agent, job_id, out.feed)
        finally:
            out.flush()

    try:
        nodes, failed = await all_nodes(session.agents[:count], job_id, follow)
    finally:
        log.close()
    return next((n.exit_code for n in nodes if n.node == failed), 0)


async def watch(cluster: ClusterInfo, job_id: int, job_dir: Path | None = None) -> str:
    """Follow the job to its end on every node; returns its status."""
    job_dir = job_dir or cluster_log_root(cluster.name) / str(job_id)
    session = ClusterSession(cluster)
    await session.open(CONNECT_TIMEOUT)
    try:
        code = await _follow_all(session, job_id, job_dir)
    finally:
        await session.close()
    jobs = await _queue(cluster, job_dir.parent)
    status = next((str(j["status"]) for j in jobs if j["job_id"] == job_id), "FAILED")
    if code is not None and code >= 0:
        record_exit_code(job_dir.parent, job_id, code)
    _record(cluster.name, job_id, status)
    return status


def _record(cluster: str, job_id: int, status: str) -> None:
    from skyc.state.database import StateDB

    with StateDB() as db:
        if db.get_cluster(cluster) is not None:
            db.reconcile_jobs(cluster, {job_id: status})


def main(argv: list[str]) -> int:
    spec = Path(argv[0])
    cluster = ClusterInfo.model_validate_json(spec.read_text())
    try:
        job_dir = Path(argv[2]) if len(argv) > 2 else None
        asyncio.run(watch(cluster, int(argv[1]), job_dir))
    finally:
        with contextlib.suppress(OSError):
            spec.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
