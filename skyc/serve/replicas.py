"""What the controller does to a replica's cluster, each a blocking call that the
controller runs in a thread: provision it, start the task's run on it (detached),
ask whether the run still goes, keep its log, tear it down.

A replica is a cluster like any other, ``<service>-<id>``, provisioned by
:func:`skyc.apply.launch.provision_cluster` and torn down by
:func:`skyc.apply.launch.teardown_cluster`. Its processes see
``SKYPILOT_SERVE_REPLICA_ID`` and, on ``local`` where replicas share this host,
``SKYC_SERVE_PORT``: the port the replica must listen on.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from skyc.errors import SkycError
from skyc.serve.names import service_dir

if TYPE_CHECKING:
    from skyc.model.nodes import ClusterInfo
    from skyc.runtime import JobResult, JobSpec
    from skyc.serve.records import Service
    from skyc.task import Task

TAIL_LINES = 20


class LogReporter:
    """A launch's progress as lines of a log file."""

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def stage(self, name: str, detail: str = "") -> None:
        text = f"{name}: {detail}" if detail else name
        self.out.write(f"{time.strftime('%H:%M:%S')} {text}\n")
        self.out.flush()

    def plan(self, plan: Any) -> None:
        for t in plan.tasks:
            self.stage("plan", f"{t.placement.infra} ({t.placement.instance_type or '-'})")

    def attempt(self, attempt: Any, next_placement: Any) -> None:
        self.stage("attempt", f"{attempt.placement.infra}: {attempt.error or 'up'}")

    def engine_event(self, event: Any) -> None:
        return None

    def log_line(self, node: str, line: str) -> None:
        return None


@dataclass(frozen=True)
class ReplicaTask:
    """What every replica of a service runs."""

    task: Task
    spec: JobSpec


def load_replica_task(service: Service) -> ReplicaTask:
    """The service's task as launched (its copy under the service's directory), with
    the envs given to ``serve up``; local paths made absolute against where it was
    launched (the controller never changes its working directory)."""
    from skyc.runtime import job_spec_from_task
    from skyc.task import load_tasks

    loaded = load_tasks(Path(service.task_file), env=service.envs, require_values=True)
    task = loaded.tasks[0].model_copy(update={"service": None})
    spec = job_spec_from_task(task, buckets=[])  # the buckets: each replica's, at start
    cwd = Path(service.cwd)

    def fix(path: str) -> str:
        p = Path(path).expanduser()
        return path if p.is_absolute() else str(cwd / p)

    task = _absolute_uploads(task, fix)
    return ReplicaTask(task, spec.model_copy(update={
        "workdir": None if spec.workdir is None else fix(spec.workdir),
        "file_mounts": {t: fix(src) for t, src in spec.file_mounts.items()}}))


def _absolute_uploads(task: Task, fix: Callable[[str], str]) -> Task:
    """``task`` with the local paths uploaded into its buckets made absolute by ``fix``."""
    from skyc.task.spec import StorageMount

    mounts: dict[str, Any] = {}
    for target, source in (task.file_mounts or {}).items():
        if isinstance(source, StorageMount) and source.source:
            source = source.model_copy(update={"source": [
                s if "://" in s else fix(s) for s in source.source]})
        mounts[target] = source
    return task.model_copy(update={"file_mounts": mounts}) if mounts else task


def launch_log(service: str, replica: int) -> Path:
    return service_dir(service) / f"replica-{replica}.launch.log"


def saved_log(service: str, replica: int) -> Path:
    return service_dir(service) / f"replica-{replica}.log"


def provision(work: ReplicaTask, service: str, replica: int, cluster: str) -> ClusterInfo:
    from skyc.apply.launch import LaunchOptions, provision_cluster

    with launch_log(service, replica).open("a", encoding="utf-8") as log:
        info, _, _ = provision_cluster(work.task, cluster,
                                       LaunchOptions(cluster=cluster, infra="local"),
                                       LogReporter(log))
    return info


def start(info: ClusterInfo, work: ReplicaTask, service: str, replica: int,
          port: int) -> JobResult:
    """Setup (to its end), then the run, detached: the replica's job."""
    from skyc.apply.bucket_jobs import job_with_buckets
    from skyc.runtime import run_job
    from skyc.state.cluster_jobs import JobRecorder
    from skyc.state.database import StateDB

    ids = {"SKYPILOT_SERVE_REPLICA_ID": str(replica), "SKYC_SERVE_REPLICA_ID": str(replica),
           "SKYC_SERVE_SERVICE": service, "SKYC_SERVE_PORT": str(port)}
    spec = work.spec.model_copy(update={"envs": {**work.spec.envs, **ids}})
    with StateDB() as db, launch_log(service, replica).open("a", encoding="utf-8") as log:
        reporter = LogReporter(log)
        # its buckets: checked, created or used again, mounted (released with its cluster)
        spec = job_with_buckets(work.task, spec, info, reporter.stage, db=db)
        recorder = JobRecorder(db, info.name, spec.name)
        result = run_job(info, spec, detach=True, on_start=recorder.started,
                         on_wait=lambda text: reporter.stage("boot", text))
        recorder.finished(result)
        reporter.stage("run", f"job {result.job_id}: {result.status}")
    return result


def run_ended(cluster: str, job_id: int) -> str | None:
    """Why the replica's run no longer goes (its processes ended or were killed, its
    node is gone); None while it runs."""
    from skyc.jobs.probe import probe
    from skyc.model.workspace import recorded_cluster

    info = recorded_cluster(cluster)
    if info is None:
        return f"cluster {cluster} is gone"
    verdict = probe(info, job_id)
    return None if verdict.state == "running" else verdict.why


def keep_log(service: str, replica: int, cluster: str, job_id: int | None) -> list[str]:
    """Save the replica's run output under the service's directory (its cluster is
    about to go); its last lines."""
    from skyc.model.workspace import recorded_cluster
    from skyc.runtime import tail_logs

    info = recorded_cluster(cluster)
    path = saved_log(service, replica)
    if info is None or job_id is None:  # it never ran: how its launch went
        return tail(launch_log(service, replica))
    with path.open("wb") as out, contextlib.suppress(SkycError, OSError):
        def write(data: bytes) -> None:
            out.write(data)

        tail_logs(info, job_id, follow=False, on_output=write, connect_timeout=5.0)
    return tail(path)


def tail(path: Path, lines: int = TAIL_LINES) -> list[str]:
    try:
        text = path.read_bytes()[-64 * 1024:].decode("utf-8", "replace")
    except OSError:
        return []
    return text.splitlines()[-lines:]


def teardown(service: str, replica: int, cluster: str) -> None:
    """End the replica's processes and destroy its cluster (nothing when it has none)."""
    from skyc.apply.launch import teardown_cluster
    from skyc.stacks.workspace import cluster_workspace

    workspace = cluster_workspace(cluster)
    if not workspace.exists() or all(p.name == "logs" for p in workspace.iterdir()):
        return
    with launch_log(service, replica).open("a", encoding="utf-8") as log:
        reporter = LogReporter(log)
        reporter.stage("down", cluster)
        teardown_cluster(cluster, reporter)


def cluster_left(cluster: str) -> bool:
    from skyc.model.nodes import CLUSTER_FILE
    from skyc.stacks.workspace import cluster_workspace

    return (cluster_workspace(cluster) / CLUSTER_FILE).exists()

