"""Managed jobs: a task handed to a controller that provisions its cluster (with
failover), runs it, watches the job and the nodes, and recovers on preemption or node
loss; the cluster is torn down when the job ends, whatever the outcome.

    launch(task_path, name=..., envs=..., secrets=...) -> job id   (hands it to the controller)
    skyc.jobs.daemon.serve()            (the one controller process: every job, a thread each)
    supervise(job_id, secrets, log)     (one job's supervision, in that process or alone)
    cancel([ids]) / stream_logs(id, follow, sink) / ManagedJobStore (queue, trail, cost)
"""

from __future__ import annotations

from skyc.jobs.controller import supervise
from skyc.jobs.submit import cancel, launch, stream_logs
from skyc.model.managed_jobs import MANAGED_STATUSES, TERMINAL, ManagedJob, Recovery
from skyc.state.managed_jobs import ManagedJobStore

__all__ = [
    "MANAGED_STATUSES",
    "TERMINAL",
    "ManagedJob",
    "ManagedJobStore",
    "Recovery",
    "cancel",
    "launch",
    "stream_logs",
    "supervise",
]
