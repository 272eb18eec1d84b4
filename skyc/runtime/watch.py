"""The watcher of a detached job: a background skyc process on the client machine.

It follows the job on every node, keeps each node's output in the local log
directory, stops the job on the other nodes when one fails (as an attached run
does), and records how the job ended in the state database.

    python -m skyc.runtime.watch <cluster.json> <job_id>
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
from pathlib import Path

from skyc.nodes import ClusterInfo
from skyc.runtime.control import _queue
from skyc.runtime.jobs import CONNECT_TIMEOUT, all_nodes
from skyc.runtime.logs import JobLog, cluster_log_root
from skyc.runtime.remote import NodeAgent
from skyc.runtime.session import ClusterSession


def start_watcher(cluster: ClusterInfo, job_id: int) -> int:
    """Start the watcher of a detached job in its own session; returns its pid."""
    spec = Path(cluster.workspace) / f"watch-{job_id}.json"
    spec.parent.mkdir(parents=True, exist_ok=True)
    spec.write_text(cluster.model_dump_json())
    proc = subprocess.Popen(
        [sys.executable, "-m", "skyc.runtime.watch", str(spec), str(job_id)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True, env={**os.environ, "PYDANTIC_DISABLE_PLUGINS": "1"})
    return proc.pid


async def watch(cluster: ClusterInfo, job_id: int) -> str:
    """Follow the job to its end on every node; returns its status."""
    session = ClusterSession(cluster)
    await session.open(CONNECT_TIMEOUT)
    try:
        table = [j for j in await session.head.status() if j["job_id"] == job_id]
        count = (table[0].get("num_nodes") if table else None) or len(session.agents)
        agents = session.agents[:count]
        log = JobLog(cluster_log_root(cluster.name) / str(job_id), None, None)

        def follow(agent: NodeAgent) -> asyncio.Future[int]:
            async def run() -> int:
                out = log.sink(agent.name, agent.label)
                code, _ = await agent.tail(job_id, True, out.feed)
                return code
            return asyncio.ensure_future(run())

        try:
            await all_nodes(agents, job_id, follow)
        finally:
            log.close()
    finally:
        await session.close()
    jobs = await _queue(cluster, None)
    status = next((str(j["status"]) for j in jobs if j["job_id"] == job_id), "FAILED")
    _record(cluster.name, job_id, status)
    return status


def _record(cluster: str, job_id: int, status: str) -> None:
    from skyc.state import StateDB

    with StateDB() as db:
        if db.get_cluster(cluster) is not None:
            db.reconcile_jobs(cluster, {job_id: status})


def main(argv: list[str]) -> int:
    spec = Path(argv[0])
    cluster = ClusterInfo.model_validate_json(spec.read_text())
    try:
        asyncio.run(watch(cluster, int(argv[1])))
    finally:
        with contextlib.suppress(OSError):
            spec.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
