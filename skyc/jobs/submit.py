"""Submitting, cancelling and reading managed jobs (what ``skyc jobs ...`` calls).

``launch`` checks the task as ``apply`` would, records the job (PENDING) and hands
it to the managed-jobs controller of this ``SKYC_HOME`` (:mod:`skyc.jobs.daemon`),
starting that in a session of its own when none runs (it outlives the terminal).
The task's secrets go to the controller over its 0600 socket and are never written
anywhere.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from skyc.errors import ConfigError, SkycError
from skyc.jobs.controller import managed_log_dir
from skyc.jobs.lease import controller_alive
from skyc.model.managed_jobs import JobSpecDoc, ManagedJob, Recovery
from skyc.state.managed_jobs import ManagedJobStore

if TYPE_CHECKING:
    from skyc.model.nodes import ClusterInfo

CONTROLLER_LOG = "controller.log"
_ATTEMPT_LOG = re.compile(r"^attempt-(\d+)-job-(\d+)\.log$")


def recovery_of(task: object) -> Recovery:
    """The task's ``resources.job_recovery`` with the defaults filled in."""
    resources = getattr(task, "resources", None)
    jr = getattr(resources, "job_recovery", None)
    if jr is None:
        return Recovery()
    return Recovery(
        strategy=jr.strategy or "EAGER_NEXT_REGION",
        max_restarts_on_errors=jr.max_restarts_on_errors or 0,
        recover_on_exit_codes=list(jr.recover_on_exit_codes or []),
    )


def launch(
    task_path: Path, *, name: str | None = None, envs: Mapping[str, str] | None = None,
    secrets: Mapping[str, str | None] | None = None, owner: str | None = None,
) -> int:
    """Check the task, record the managed job and start its controller; its id.
    ``owner``: whose job it is (a launch forwarded to a controller cluster: its
    submitter's); default: who this skyc acts for."""
    from skyc.apply.preflight import check_task
    from skyc.runtime import job_spec_from_task
    from skyc.task import load_tasks

    task_file = load_tasks(task_path, env=dict(envs or {}), secrets=dict(secrets or {}),
                           require_values=True)
    for task in task_file.tasks:
        check_task(task)
        job_spec_from_task(task, buckets=[])  # the buckets: on each cluster it gets
    first = task_file.tasks[0]
    header = getattr(task_file.header, "name", None)
    secret_values: dict[str, str] = {}
    for task in task_file.tasks:
        secret_values.update(task.secret_values())
    from skyc.state.database import redact

    # An --env value under a secret-looking name would be stored redacted: it travels
    # on the controller's stdin with the secrets instead.
    given = dict(envs or {})
    plain = {k: v for k, v in given.items() if redact({k: v})[k] == v}
    hidden = {k: v for k, v in given.items() if k not in plain}
    doc = JobSpecDoc(cwd=os.getcwd(), envs=plain, from_stdin=sorted(secret_values),
                     stdin_envs=sorted(hidden), recovery=recovery_of(first))
    store = ManagedJobStore()
    try:
        job_id = store.add(name or header or first.name, str(task_path.resolve()), doc,
                           len(task_file.tasks), owner=owner)
    finally:
        store.close()
    start_controller(job_id, secret_values, hidden)
    return job_id


def start_controller(job_id: int, secrets: Mapping[str, str],
                     envs: Mapping[str, str] | None = None) -> int:
    """Hand the job to the managed-jobs controller (started when none runs); its pid.
    A job that cannot be handed over is FAILED, not left PENDING."""
    from skyc.jobs.starter import hand_off

    try:
        return hand_off(job_id, secrets, envs or {})
    except SkycError as exc:
        store = ManagedJobStore()
        try:
            job = store.require(job_id)
            if job.status == "PENDING" and job.lease_owner is None:  # no controller has it
                store.set_status(job_id, "FAILED", exc.message, failure=exc.message)
        finally:
            store.close()
        raise


def read_secrets(text: str) -> dict[str, dict[str, str]]:
    """The controller's stdin: ``{"secrets": {NAME: value}, "envs": {NAME: value}}``
    (empty: none of either)."""
    if not text.strip():
        return {"secrets": {}, "envs": {}}
    try:
        doc = json.loads(text)
        parts = {key: doc.get(key) or {} for key in ("secrets", "envs")}
        if not all(isinstance(v, dict) for v in parts.values()):
            raise ValueError
    except (ValueError, AttributeError):
        raise ConfigError("controller stdin: expected JSON {\"secrets\": {NAME: value}}",
                          hint="give no stdin (or an empty one) when the task has no "
                          "secrets") from None
    return {key: {str(k): str(v) for k, v in part.items()} for key, part in parts.items()}


def cancel(job_ids: list[int], *, wait_s: float = 300.0) -> list[tuple[int, str]]:
    """Cancel jobs: their controllers stop the run and tear the cluster down; a job
    whose controller is gone is cleaned up here. (id, status after) for each job."""
    from skyc.jobs.controller import Controller
    from skyc.jobs.lease import Lease

    store = ManagedJobStore()
    try:
        out: list[tuple[int, str]] = []
        for job_id in job_ids:
            job = store.require(job_id)
            if job.done:
                out.append((job_id, job.status))
                continue
            store.request_cancel(job_id)
            store.set_status(job_id, "CANCELLING", "cancel requested")
            deadline = time.monotonic() + wait_s
            while controller_alive(store.require(job_id)) and time.monotonic() < deadline:
                if store.require(job_id).done:
                    break
                time.sleep(0.2)
            job = store.require(job_id)
            if not job.done:
                # No controller holds the lease: end the job here, under its lease.
                lease = Lease(store, job_id)
                lease.acquire()
                with lease, open(os.devnull, "w") as sink:
                    Controller(store, job_id, {}, lease, sink)._finish(
                        "CANCELLED", "cancelled", job.cluster)
            out.append((job_id, store.require(job_id).status))
        return out
    finally:
        store.close()


def attempt_logs(job_id: int) -> list[Path]:
    """The saved output of each run of the job, oldest first."""
    d = managed_log_dir(job_id)
    found = []
    if d.is_dir():
        for p in d.iterdir():
            m = _ATTEMPT_LOG.match(p.name)
            if m:
                found.append(((int(m.group(1)), int(m.group(2))), p))
    return [p for _, p in sorted(found)]


def stream_logs(job_id: int, follow: bool, on_output: Callable[[bytes], None],
                poll_s: float = 0.5) -> ManagedJob:
    """The job's output: every saved run, then the live one; with ``follow``, until the
    job ends. Returns the job as it was last read."""
    from skyc.runtime import tail_logs

    store = ManagedJobStore()
    shown: set[str] = set()
    try:
        while True:
            job = store.require(job_id)
            for path in attempt_logs(job_id):
                if path.name not in shown:
                    shown.add(path.name)
                    on_output(path.read_bytes())
            live = _live_run(store, job)
            if live is not None and live[2] not in shown:
                info, run_id, key = live
                with contextlib.suppress(SkycError, OSError):
                    tail_logs(info, run_id, follow=follow, on_output=on_output)
                    if follow:
                        shown.add(key)
            if job.done or not follow:
                return job
            time.sleep(poll_s)
    finally:
        store.close()


def _live_run(store: ManagedJobStore, job: ManagedJob) -> tuple[ClusterInfo, int, str] | None:
    from skyc.model.workspace import recorded_cluster

    if job.done or job.status != "RUNNING" or job.cluster is None or job.cluster_job is None:
        return None
    attempts = [a for a in store.attempts(job.id) if a.ended_at is None]
    info = recorded_cluster(job.cluster) if attempts else None
    if info is None:
        return None
    return info, job.cluster_job, f"attempt-{attempts[-1].id}-job-{job.cluster_job}.log"


def follow_controller_log(job_id: int, follow: bool, on_output: Callable[[bytes], None],
                          poll_s: float = 0.5) -> ManagedJob:
    """The controller's own log; with ``follow``, until the job ends."""
    store = ManagedJobStore()
    path = managed_log_dir(job_id) / CONTROLLER_LOG
    offset = 0
    try:
        while True:
            job = store.require(job_id)
            with contextlib.suppress(OSError), path.open("rb") as fh:
                fh.seek(offset)
                data = fh.read()
                offset += len(data)
                if data:
                    on_output(data)
            if job.done or not follow:
                return job
            time.sleep(poll_s)
    finally:
        store.close()
