"""The controller of one managed job: provision, run, watch, recover, tear down.

    status: PENDING -> STARTING -> RUNNING -> SUCCEEDED
                          |           |  ^
                          |           v  |  node lost / recover_on_exit_codes
                          |        RECOVERING  (EAGER_NEXT_REGION: the lost region is
                          |                     blocked; FAILOVER: the same region first)
                          v
        FAILED_NO_RESOURCE, FAILED_SETUP, FAILED (restarts used up), CANCELLED

Every stage is a function of skyc.apply.launch (provision with failover, teardown) or of
skyc.runtime (run, cancel); the job's state lives in the state database, so a
controller started again on the same job resumes where the last one stopped: the
cluster's name is fixed by the job id and the task's index, and a job already
running on it is watched, not started again.

Controllers of many jobs share one process (:mod:`skyc.jobs.daemon`), one thread
each: nothing here changes process-wide state (the working directory, the
environment, signal handlers, stdout). The task's relative paths are resolved
against the directory it was launched from, and a cancel interrupts an engine
command of this thread only (:func:`skyc.stacks.engine.interruptible`).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from skyc.errors import (
    Cancelled,
    FailoverExhausted,
    InfeasibleError,
    LeaseLost,
    ProvisionError,
    SkycError,
)
from skyc.jobs.lease import Lease, holder_gone
from skyc.jobs.probe import Verdict, probe
from skyc.model.managed_jobs import ManagedJob, ManagedStatus, cluster_for
from skyc.state.managed_jobs import ManagedJobStore

if TYPE_CHECKING:
    from skyc.model.nodes import ClusterInfo
    from skyc.model.plan import Placement
    from skyc.optimizer.blocked import Blocked
    from skyc.runtime import JobSpec
    from skyc.task import Task


NO_RESOURCE = (InfeasibleError, ProvisionError, FailoverExhausted)
# How long saving a lost run's logs waits for its nodes (they rarely come back).
LOST_NODE_WAIT_S = 5.0


def poll_interval() -> float:
    raw = os.environ.get("SKYC_JOBS_POLL_S")
    try:
        return max(0.05, float(raw)) if raw else 5.0
    except ValueError:
        return 5.0


def managed_logs_root() -> Path:
    """Where managed jobs' logs live: one directory per job, and the controller's log."""
    from skyc.settings.home import skyc_home

    return skyc_home() / "logs" / "managed"


def managed_log_dir(job_id: int) -> Path:
    return managed_logs_root() / str(job_id)


def task_id(job: ManagedJob, task_index: int) -> str:
    stamp = time.strftime("%Y-%m-%d-%H-%M-%S", time.gmtime(job.submitted_at))
    return f"skyc-managed-{stamp}_{job.name or 'job'}_{job.id}-{task_index}"


class FileReporter:
    """The launch stages' progress, as lines of the controller's log."""

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def _line(self, text: str) -> None:
        self.out.write(f"{time.strftime('%H:%M:%S')} {text}\n")
        self.out.flush()

    def stage(self, name: str, detail: str = "") -> None:
        self._line(f"{name}: {detail}" if detail else name)

    def plan(self, plan: Any) -> None:
        for t in plan.tasks:
            self._line(f"plan: {t.placement.infra} ({t.placement.instance_type or '-'})")

    def attempt(self, attempt: Any, next_placement: Any) -> None:
        self._line(f"attempt on {attempt.placement.infra}: {attempt.error or 'up'} "
                   f"{attempt.message}")

    def engine_event(self, event: Any) -> None:
        return None

    def log_line(self, node: str, line: str) -> None:
        return None


@dataclass
class _TaskRun:
    """Where a task's run stands: its cluster, attempt and run there (None: not yet),
    and the scope the next placement must avoid or keep after a recovery."""

    index: int
    info: ClusterInfo | None
    attempt: int | None
    run_id: int | None
    blocked: list[Blocked] = field(default_factory=list)
    pin: str | None = None


class Controller:
    def __init__(self, store: ManagedJobStore, job_id: int, secrets: Mapping[str, str],
                 lease: Lease, log: TextIO, envs: Mapping[str, str] | None = None) -> None:
        self.store = store
        self.job_id = job_id
        self.secrets = dict(secrets)
        self.envs = dict(envs or {})   # --env values under secret-looking names
        self.lease = lease
        self.reporter = FileReporter(log)
        self.poll_s = poll_interval()
        self.cancel = threading.Event()   # set once a cancel is requested

    def watch_cancel(self) -> Callable[[], None]:
        """Set ``self.cancel`` as soon as the job's cancel is requested (polled, at most
        a second apart), until the returned function is called: it stops the watch and
        waits for it, so nothing reads the store after it closes or keeps the controller
        (and its secrets) alive after the job."""
        done = threading.Event()

        def watch() -> None:
            while not done.wait(min(self.poll_s, 1.0)):
                with contextlib.suppress(SkycError):
                    if self.store.require(self.job_id).cancel_requested:
                        self.cancel.set()
                        return

        thread = threading.Thread(target=watch, name=f"cancel-{self.job_id}", daemon=True)
        thread.start()

        def stop() -> None:
            done.set()
            thread.join()

        return stop

    @property
    def job(self) -> ManagedJob:
        return self.store.require(self.job_id)

    def say(self, text: str) -> None:
        self.reporter.stage("job", text)

    # -- the job ---------------------------------------------------------------

    def run(self) -> str:
        job = self.job
        if job.done:
            return job.status
        try:
            tasks = self._load(job)
        except SkycError as exc:
            hint = f" ({exc.hint})" if exc.hint else ""
            return self._finish("FAILED", f"cannot load the task: {exc.message}{hint}",
                                job.cluster)
        if job.status == "PENDING":
            self.store.set_status(self.job_id, "STARTING", "controller started",
                                  started_at=time.time())
        for index in range(job.task_index, len(tasks)):
            cluster = cluster_for(job, index)
            try:
                status, why = self._run_task(index, tasks[index], cluster)
            except Cancelled:
                status, why = "CANCELLED", "cancelled"
            if status != "SUCCEEDED":
                return self._finish(status, why, cluster)
            self._down(cluster)
            self.store.update(self.job_id, task_index=index + 1, cluster=None,
                              cluster_job=None)
        return self._finish("SUCCEEDED", f"{len(tasks)} task(s) succeeded", None)

    def _load(self, job: ManagedJob) -> list[Task]:
        from skyc.task import load_tasks

        missing = [n for n in job.spec.from_stdin if n not in self.secrets]
        missing += [n for n in job.spec.stdin_envs if n not in self.envs]
        if missing:
            raise SkycError(f"secret(s) {', '.join(missing)} not given to the controller",
                            hint="secrets reach the controller on its stdin only: run "
                            "`skyc jobs controller ID` with them as JSON on stdin")
        secrets: dict[str, str | None] = dict(self.secrets)
        return load_tasks(job.task_path, env={**job.spec.envs, **self.envs}, secrets=secrets,
                          require_values=True).tasks

    def _finish(self, status: ManagedStatus, why: str, cluster: str | None) -> str:
        if cluster is not None:
            self._down(cluster)
        for attempt in self.store.attempts(self.job_id):
            if attempt.ended_at is None:
                self.store.close_attempt(attempt.id, status)
        self.store.set_status(self.job_id, status, why, cluster=None,
                              failure=None if status == "SUCCEEDED" else why)
        self.say(f"{status}: {why}")
        return status

    # -- one task --------------------------------------------------------------

    def _spec(self, task: Task, index: int) -> JobSpec:
        from skyc.runtime import job_spec_from_task

        job = self.job
        spec = _absolute_paths(job_spec_from_task(task, buckets=[]), Path(job.spec.cwd))
        ids = {"TASK_ID": task_id(job, index), "MANAGED_JOB_ID": str(job.id),
               "MANAGED_JOB_NAME": job.name or "", "MANAGED_TASK_INDEX": str(index)}
        extra = {p + k: v for p in ("SKYPILOT_", "SKYC_") for k, v in ids.items()}
        return spec.model_copy(update={"envs": {**spec.envs, **extra}})

    def _run_task(self, index: int, task: Task, cluster: str) -> tuple[ManagedStatus, str]:
        spec = self._spec(task, index)
        run = _TaskRun(index, *self._resume(cluster))
        while True:
            self._check_cancel()
            ended = self._ensure_run(run, task, spec, cluster)
            if ended is not None:
                return ended
            assert run.info is not None and run.run_id is not None
            verdict = self._watch(run.info, run.run_id)
            # a lost node does not answer: wait for it briefly, not a booting node's while
            assert run.attempt is not None
            self._save_logs(run.info, run.run_id, run.attempt,
                            connect_timeout=LOST_NODE_WAIT_S if verdict.state == "lost" else None)
            ended = self._on_verdict(verdict, run, cluster)
            if ended is not None:
                return ended

    def _ensure_run(self, run: _TaskRun, task: Task, spec: JobSpec,
                    cluster: str) -> tuple[ManagedStatus, str] | None:
        """A cluster (provisioned when there is none) and a run on it (submitted when
        there is none); the task's end when either cannot be had."""
        if run.info is None:
            try:
                run.info, placement = self._provision(task, cluster, run.blocked, run.pin)
            except NO_RESOURCE as exc:
                return "FAILED_NO_RESOURCE", exc.message
            run.attempt = self.store.open_attempt(self.job_id, run.index, cluster,
                                                  placement.infra, placement.hourly_cost)
        assert run.attempt is not None
        if run.run_id is None:
            self._check_cancel()
            result = self._submit(run.info, self._with_buckets(task, spec, run.info))
            if result.status == "FAILED_SETUP":
                return "FAILED_SETUP", result.describe_failure()
            run.run_id = result.job_id
            self.store.set_attempt_job(run.attempt, run.run_id)
            self.store.set_status(
                self.job_id, "RUNNING", f"running on cluster {cluster} (job {run.run_id})",
                {"cluster": cluster, "infra": _infra(run.info)}, cluster=cluster,
                cluster_job=run.run_id)
        return None

    def _on_verdict(self, verdict: Verdict, run: _TaskRun,
                    cluster: str) -> tuple[ManagedStatus, str] | None:
        """The task's end, or None after arranging its next run (recovered or restarted)."""
        assert run.info is not None and run.attempt is not None and run.run_id is not None
        if verdict.state == "succeeded":
            self.store.close_attempt(run.attempt, "SUCCEEDED")
            return "SUCCEEDED", verdict.why
        if verdict.state == "cancelled":
            raise Cancelled("cancelled")
        if verdict.state == "failed_setup":
            return "FAILED_SETUP", verdict.why
        recovery = self.job.spec.recovery
        preempted = verdict.state == "lost" or (
            verdict.exit_code in recovery.recover_on_exit_codes)
        if preempted and recovery.strategy == "NONE":
            return "FAILED", f"{verdict.why} (job_recovery strategy NONE: no recovery)"
        if preempted:
            self._recover(verdict, run, cluster)
            return None
        restarts = self.job.restarts
        if restarts >= recovery.max_restarts_on_errors:
            return "FAILED", verdict.why
        self._stop_run(run.info, run.run_id)
        self.store.set_status(
            self.job_id, "RECOVERING",
            f"{verdict.why}; restart {restarts + 1} of {recovery.max_restarts_on_errors}",
            {"cluster": cluster, "infra": _infra(run.info), "why": verdict.why},
            restarts=restarts + 1, cluster_job=None)
        run.run_id = None
        return None

    def _recover(self, verdict: Verdict, run: _TaskRun, cluster: str) -> None:
        """A preempted run: its attempt closed, its cluster down, the next placement's
        scope chosen by the recovery strategy."""
        from skyc.apply.launch import end_cluster_jobs

        assert run.info is not None and run.attempt is not None
        strategy = self.job.spec.recovery.strategy
        where = _infra(run.info)
        why = verdict.why
        if verdict.state == "lost":  # and what the cloud says of the nodes
            from skyc.apply.reconcile import cloud_view

            why += cloud_view(cluster)
        self.store.close_attempt(run.attempt, f"PREEMPTED: {why}")
        self.store.set_status(
            self.job_id, "RECOVERING", f"{why}; recovering ({strategy})",
            {"cluster": cluster, "infra": where, "why": why},
            recoveries=self.job.recoveries + 1, cluster_job=None)
        with contextlib.suppress(SkycError, OSError):
            end_cluster_jobs(cluster, for_job=self.job_id)
        self._down(cluster, keep_buckets=True)
        run.blocked, run.pin = _next_scope(run.info, strategy)
        run.info, run.attempt, run.run_id = None, None, None

    def _resume(self, cluster: str) -> tuple[ClusterInfo | None, int | None, int | None]:
        """What a controller before this one left: the cluster, its open attempt, the
        run on it (None for each that is not there)."""
        from skyc.model.workspace import recorded_cluster

        job = self.job
        if job.cluster != cluster:
            return None, None, None
        info = recorded_cluster(cluster)
        if info is None:
            return None, None, None
        open_ = [a for a in self.store.attempts(self.job_id)
                 if a.cluster == cluster and a.ended_at is None]
        if not open_:
            return None, None, None
        self.say(f"resuming supervision of cluster {cluster} (job {job.cluster_job})")
        return info, open_[-1].id, job.cluster_job

    def _provision(self, task: Task, cluster: str, blocked: list[Blocked],
                   pin: str | None) -> tuple[ClusterInfo, Placement]:
        """Provision with failover; a cancel stops the engine mid-command (as Ctrl-C
        stops ``skyc apply``), and what the attempt created is destroyed by the end
        of the job."""
        from skyc.errors import EngineInterrupted
        from skyc.stacks.engine import interruptible

        try:
            with interruptible(self.cancel):
                return self._provision_once(task, cluster, blocked, pin)
        except EngineInterrupted:
            self.say("provisioning interrupted: the job was cancelled")
            raise Cancelled("cancelled") from None

    def _provision_once(self, task: Task, cluster: str, blocked: list[Blocked],
                        pin: str | None) -> tuple[ClusterInfo, Placement]:
        from skyc.apply.launch import LaunchOptions, provision_cluster

        self.store.update(self.job_id, cluster=cluster)  # torn down even if interrupted
        try:
            info, placement, _ = provision_cluster(
                task, cluster, LaunchOptions(cluster=cluster, infra=pin), self.reporter,
                blocked=blocked)
        except NO_RESOURCE as exc:
            if not blocked and pin is None:
                raise
            # The lost region (or the pinned one) may be all there is: try anywhere.
            self.say(f"no placement outside the lost scope ({exc.message}); trying anywhere")
            self._down(cluster, keep_buckets=True)
            info, placement, _ = provision_cluster(
                task, cluster, LaunchOptions(cluster=cluster), self.reporter)
        self.store.update(self.job_id, cluster=cluster)
        return info, placement

    def _submit(self, info: ClusterInfo, spec: JobSpec) -> Any:
        from skyc.runtime import run_job
        from skyc.state.cluster_jobs import JobRecorder
        from skyc.state.database import StateDB

        stop = threading.Event()

        def cancel_watch() -> None:
            # Setup runs to its end inside run_job: a cancel ends it on the nodes.
            from skyc.runtime import stop_all_jobs

            while not stop.wait(min(self.poll_s, 0.5)):
                if self.cancel.is_set():
                    with contextlib.suppress(SkycError):
                        stop_all_jobs(info)
                    return

        watcher = threading.Thread(target=cancel_watch, name="cancel-watch", daemon=True)
        watcher.start()
        try:
            with StateDB() as db:
                recorder = JobRecorder(db, info.name, spec.name)
                result = run_job(info, spec, detach=True, on_start=recorder.started,
                                 on_wait=lambda text: self.reporter.stage("boot", text))
                recorder.finished(result)
        finally:
            stop.set()
            watcher.join(timeout=30)
        self._check_cancel()
        return result

    def _watch(self, info: ClusterInfo, run_id: int) -> Verdict:
        while True:
            if self.lease.lost.is_set():
                raise LeaseLost(f"managed job {self.job_id}: the lease was taken over")
            if self.cancel.is_set() or self.job.cancel_requested:
                self._stop_run(info, run_id)
                return Verdict("cancelled", "cancelled")
            verdict = probe(info, run_id)
            if verdict.state != "running":
                self.say(f"job {run_id} on {info.name}: {verdict.state}: {verdict.why}")
                return verdict
            self.cancel.wait(self.poll_s)

    def _check_cancel(self) -> None:
        if self.lease.lost.is_set():
            raise LeaseLost(f"managed job {self.job_id}: the lease was taken over")
        if self.cancel.is_set() or self.job.cancel_requested:
            raise Cancelled("cancelled")

    def _stop_run(self, info: ClusterInfo, run_id: int) -> None:
        from skyc.runtime import cancel

        with contextlib.suppress(SkycError, OSError):
            cancel(info, run_id)

    def _save_logs(self, info: ClusterInfo, run_id: int, attempt: int, *,
                   connect_timeout: float | None = None) -> None:
        """Keep the run's output under the job's log directory (its cluster goes away)."""
        from skyc.runtime import tail_logs
        from skyc.runtime.run import CONNECT_TIMEOUT

        path = managed_log_dir(self.job_id) / f"attempt-{attempt}-job-{run_id}.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        # Written under another name and renamed whole: a follower lists the saved
        # logs by name and reads each once, so it must never see a partial one.
        partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
        with partial.open("wb") as out, contextlib.suppress(SkycError, OSError):
            def write(data: bytes) -> None:
                out.write(data)

            tail_logs(info, run_id, follow=False, on_output=write,
                      connect_timeout=connect_timeout or CONNECT_TIMEOUT)
        os.replace(partial, path)

    def _with_buckets(self, task: Task, spec: JobSpec, info: ClusterInfo) -> JobSpec:
        """The task's buckets, ready on this attempt's cluster (created on the first,
        mounted again on each later one: a checkpoint written there is read back)."""
        from skyc.apply.bucket_jobs import job_with_buckets

        return job_with_buckets(_absolute_sources(task, Path(self.job.spec.cwd)), spec, info,
                                lambda stage, text: self.say(f"{stage}: {text}"))

    def _down(self, cluster: str, *, keep_buckets: bool = False) -> None:
        from skyc.apply.launch import teardown_cluster
        from skyc.stacks.workspace import cluster_workspace

        workspace = cluster_workspace(cluster)
        if not workspace.exists() or all(p.name == "logs" for p in workspace.iterdir()):
            # Its stack was never written (nothing of it exists), but a shared network
            # made for it may have been.
            from skyc.apply.networks import release_networks
            from skyc.state.database import StateDB

            with StateDB() as db:
                if db.get_cluster(cluster) is not None:
                    db.remove_cluster(cluster)
                release_networks(cluster, db, lambda stage, text: self.say(f"{stage}: {text}"),
                                 self.reporter.engine_event)
            return
        self.say(f"tearing down cluster {cluster}")
        teardown_cluster(cluster, self.reporter, for_job=self.job_id,
                         keep_buckets=keep_buckets)


def _infra(info: ClusterInfo, *, zone: bool = True) -> str:
    parts = (info.region, info.zone) if zone else (info.region,)
    return "/".join([info.cloud, *(p for p in parts if p and p != info.cloud)])


def _next_scope(info: ClusterInfo, strategy: str) -> tuple[list[Blocked], str | None]:
    """EAGER_NEXT_REGION blocks the region that was lost; FAILOVER tries it again first."""
    from skyc.optimizer.blocked import Blocked

    if strategy == "FAILOVER":
        return [], _infra(info, zone=False)
    return [Blocked(cloud=info.cloud, region=info.region)], None


def supervise(job_id: int, secrets: Mapping[str, str], log: TextIO,
              envs: Mapping[str, str] | None = None, *, wait: bool = True) -> str:
    """Take the job's lease and supervise it to its end; returns its final status.

    With ``wait``, waits for a dead controller's lease to expire; refuses (LeaseHeld)
    while a live one holds it. Safe to run in many threads of one process at once."""
    store = ManagedJobStore()
    try:
        job = store.require(job_id)
        lease = Lease(store, job_id)
        lease.acquire(wait_s=_wait_for(job, lease.ttl) if wait else 0.0)
        with lease:
            controller = Controller(store, job_id, secrets, lease, log, envs)
            stop_watching = controller.watch_cancel()
            try:
                return controller.run()
            except LeaseLost as exc:
                controller.say(exc.message)
                return store.require(job_id).status
            except SkycError as exc:
                return controller._finish("FAILED", exc.message, store.require(job_id).cluster)
            finally:
                stop_watching()
    finally:
        store.close()


def _absolute_paths(spec: JobSpec, cwd: Path) -> JobSpec:
    """The spec with its local paths (workdir, file mounts' sources) made absolute
    against ``cwd``, where the job was launched: a controller thread never changes
    its process's working directory."""
    def fix(path: str) -> str:
        p = Path(path).expanduser()
        return path if p.is_absolute() or "://" in path else str(cwd / p)

    mounts = {target: fix(local) for target, local in spec.file_mounts.items()}
    workdir = None if spec.workdir is None else fix(spec.workdir)
    return spec.model_copy(update={"workdir": workdir, "file_mounts": mounts})


def _absolute_sources(task: Task, cwd: Path) -> Task:
    """The task with its buckets' local sources made absolute against ``cwd``."""
    mounts: dict[str, Any] = {}
    for target, source in task.file_mounts.items():
        if not isinstance(source, str) and source.source:
            local = [s if "://" in s or Path(s).expanduser().is_absolute()
                     else str(cwd / s) for s in source.source]
            source = source.model_copy(update={"source": local})
        mounts[target] = source
    return task.model_copy(update={"file_mounts": mounts})


def _wait_for(job: ManagedJob, ttl: float) -> float:
    """How long to wait for the lease: until it expires when its holder is a process
    of this machine that has died, not at all otherwise."""
    if not holder_gone(job):
        return 0.0
    return max(0.0, (job.lease_until or 0) - time.time()) + ttl / 3
