"""Running jobs on a cluster's nodes: transports, the node agent, workdir sync, logs.

    run_job(cluster, spec, on_output=..., rerun_setup=False, detach=False, log_dir=None)
    queue(cluster) / tail_logs(cluster, job_id, follow) / cancel(cluster, job_id)
    stop_all_jobs(cluster) / wait_for_nodes(cluster, timeout) / wait_for_boot(cluster)

asyncssh is imported only when a cluster has SSH nodes.
"""

from __future__ import annotations

from skyc.runtime.control import (
    cancel,
    queue,
    stop_all_jobs,
    tail_logs,
    wait_for_boot,
    wait_for_nodes,
)
from skyc.runtime.run import run_job
from skyc.runtime.spec import JobResult, JobSpec, NodeResult, job_spec_from_task

__all__ = [
    "JobResult",
    "JobSpec",
    "NodeResult",
    "cancel",
    "job_spec_from_task",
    "queue",
    "run_job",
    "stop_all_jobs",
    "tail_logs",
    "wait_for_boot",
    "wait_for_nodes",
]
