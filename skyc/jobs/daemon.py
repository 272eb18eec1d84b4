"""The managed-jobs controller: one process per ``SKYC_HOME`` supervising every job.

``skyc jobs controller`` runs :func:`serve`. It holds ``$SKYC_HOME/jobs/controller.lock``
(one controller at a time; the kernel drops the lock when it dies), listens on the
socket of :mod:`skyc.jobs.handoff`, and supervises each job in a thread of its own
(:func:`skyc.jobs.controller.supervise`, under the job's lease). It takes:

- a job handed to it by ``skyc jobs launch`` (with that job's secrets), at once;
- every unfinished job whose lease is free or has expired (its controller died),
  except one just submitted, whose launcher is still handing it over.

It exits by itself once it has had no job to supervise for ``SKYC_JOBS_IDLE_S``
seconds (60).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import threading
import time
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any, TextIO

from skyc.errors import AlreadyRunning, LeaseHeld, SkycError
from skyc.jobs import handoff
from skyc.jobs.controller import managed_log_dir, managed_logs_root, poll_interval
from skyc.model.managed_jobs import ManagedJob
from skyc.state.managed_jobs import ManagedJobStore

LOCK_NAME = "controller.lock"
DAEMON_LOG = "daemon.log"
JOB_LOG = "controller.log"
DEFAULT_IDLE_S = 60.0
# A job this young and still PENDING is being handed over by its launcher.
HANDOFF_GRACE_S = 90.0  # longer than a launcher tries (starter.HANDOFF_TIMEOUT_S)


def idle_timeout() -> float:
    raw = os.environ.get("SKYC_JOBS_IDLE_S")
    try:
        return max(0.5, float(raw)) if raw else DEFAULT_IDLE_S
    except ValueError:
        return DEFAULT_IDLE_S


def daemon_log_path() -> Path:
    path = managed_logs_root() / DAEMON_LOG
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def lock_pid() -> int | None:
    """The pid written in the controller's lock file (its holder, or the last one)."""
    try:
        return int((handoff.jobs_dir() / LOCK_NAME).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _take_lock(wait_s: float = 30.0) -> IO[str]:
    """The controller's lock; AlreadyRunning when a live controller answers."""
    fh = (handoff.jobs_dir() / LOCK_NAME).open("a+")
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            pid = handoff.ping()
            if pid is not None:
                fh.close()
                raise AlreadyRunning(
                    f"the managed-jobs controller already runs (pid {pid})") from None
            if time.monotonic() > deadline:  # the holder neither answers nor exits
                fh.close()
                raise SkycError(
                    f"the managed-jobs controller lock is held by pid {lock_pid()}, which "
                    "does not answer", hint="if that process is stuck, stop it, then run "
                    "`skyc jobs controller --restart`") from None
            time.sleep(0.2)
    fh.seek(0)
    fh.truncate()
    fh.write(f"{os.getpid()}\n")
    fh.flush()
    return fh


class Daemon:
    def __init__(self, log: TextIO, idle_s: float | None = None) -> None:
        self.log = log
        self.idle_s = idle_timeout() if idle_s is None else idle_s
        self.poll_s = min(poll_interval(), 1.0)
        self.store = ManagedJobStore()
        self.workers: dict[int, threading.Thread] = {}
        self.pid = os.getpid()

    def say(self, text: str) -> None:
        self.log.write(f"{time.strftime('%H:%M:%S')} controller {self.pid}: {text}\n")
        self.log.flush()

    def serve(self) -> None:
        lock = _take_lock()
        _preload()
        server = handoff.listen(handoff.socket_path())
        self.say("started")
        try:
            self._loop(server)
        finally:
            # Refuse new hand-overs first: a launcher then starts the next controller.
            server.close()
            with contextlib.suppress(OSError):
                handoff.socket_path().unlink()
            self.store.close()
            self.say("exited")
            lock.close()

    def _loop(self, server: Any) -> None:
        idle_since = time.monotonic()
        said: str | None = None   # the trouble last logged (once, not every round)
        while True:
            readable, _, _ = select.select([server], [], [], self.poll_s)
            if readable:
                self._accept(server)
            self._reap()
            try:
                self._scan()
                trouble = None
            except SkycError as exc:  # e.g. the database busy for long: next round
                trouble = exc.message
            except Exception as exc:  # a row it cannot read: the others' supervision goes on
                trouble = f"{type(exc).__name__}: {exc}"
            if trouble is not None and trouble != said:
                self.say(f"cannot read the managed jobs: {trouble}")
            said = trouble
            if self.workers:
                idle_since = time.monotonic()
            elif time.monotonic() - idle_since >= self.idle_s:
                self.say(f"no job to supervise for {self.idle_s:g} s")
                return

    def _accept(self, server: Any) -> None:
        with contextlib.suppress(BlockingIOError):
            conn, _ = server.accept()
            with conn:
                conn.settimeout(5.0)
                try:
                    if not handoff.same_user(conn):
                        return
                    answer = self._answer(handoff.read_line(conn))
                except (OSError, ValueError, TypeError, KeyError) as exc:
                    answer = {"ok": False, "error": f"bad request: {type(exc).__name__}"}
                with contextlib.suppress(OSError):
                    handoff.write_line(conn, answer)

    def _answer(self, doc: dict[str, Any]) -> dict[str, Any]:
        op = doc.get("op")
        if op == "ping":
            return {"ok": True, "pid": self.pid}
        if op == "supervise":
            job_id = int(doc["job"])
            secrets = {str(k): str(v) for k, v in dict(doc.get("secrets") or {}).items()}
            envs = {str(k): str(v) for k, v in dict(doc.get("envs") or {}).items()}
            if self.store.get(job_id) is None:
                return {"ok": False, "error": f"no managed job {job_id}"}
            self._start(job_id, secrets, envs)
            return {"ok": True, "pid": self.pid}
        return {"ok": False, "error": f"unknown op {op!r}"}

    def _scan(self) -> None:
        now = time.time()
        for job in self.store.all_jobs():
            if job.id not in self.workers and _orphaned(job, now):
                self._start(job.id, {}, {})

    def _reap(self) -> None:
        for job_id, thread in list(self.workers.items()):
            if not thread.is_alive():
                thread.join()
                del self.workers[job_id]

    def _start(self, job_id: int, secrets: Mapping[str, str], envs: Mapping[str, str]) -> None:
        if job_id in self.workers:
            return
        self.say(f"supervising managed job {job_id}")
        thread = threading.Thread(target=_work, args=(job_id, dict(secrets), dict(envs)),
                                  name=f"job-{job_id}", daemon=True)
        self.workers[job_id] = thread
        thread.start()


def _orphaned(job: ManagedJob, now: float) -> bool:
    """An unfinished job no controller holds, and no launcher is handing over."""
    if job.done:
        return False
    if job.lease_owner is not None and (job.lease_until or 0) >= now:
        return False
    return not (job.status == "PENDING" and job.lease_owner is None
                and now - job.submitted_at < HANDOFF_GRACE_S)


def _work(job_id: int, secrets: dict[str, str], envs: dict[str, str]) -> None:
    """One job's worker: supervise it to its end, writing the job's controller log."""
    from skyc.jobs.controller import supervise

    log_dir = managed_log_dir(job_id)
    log_dir.mkdir(parents=True, exist_ok=True)
    with (log_dir / JOB_LOG).open("a", encoding="utf-8") as log:
        try:
            supervise(job_id, secrets, log, envs, wait=False)
        except LeaseHeld:
            return  # another controller took it first: it is that one's job
        except Exception as exc:  # one job's bug must not end the others' supervision
            log.write(f"controller error: {type(exc).__name__}: {exc}\n")
            log.write(traceback.format_exc())
            log.flush()
            _fail(job_id, f"controller error: {type(exc).__name__}: {exc}", log)


def _fail(job_id: int, why: str, log: TextIO) -> None:
    """End a job its worker could not: FAILED, its cluster torn down (else it would be
    taken up again and again)."""
    from skyc.jobs.controller import Controller
    from skyc.jobs.lease import Lease

    store = ManagedJobStore()
    try:
        lease = Lease(store, job_id)
        lease.acquire()
        with lease:
            job = store.require(job_id)
            if not job.done:
                Controller(store, job_id, {}, lease, log)._finish("FAILED", why, job.cluster)
    except Exception as exc:  # the database itself is failing: say so in the log
        log.write(f"could not mark managed job {job_id} FAILED: {exc}\n")
    finally:
        store.close()


def _preload() -> None:
    """Import what workers use, once, before any worker thread starts."""
    import importlib

    for name in ("skyc.jobs.probe", "skyc.apply.launch", "skyc.runtime", "skyc.task"):
        importlib.import_module(name)


def serve() -> None:
    """Run the controller until it has been idle long enough (``skyc jobs controller``)."""
    with daemon_log_path().open("a", encoding="utf-8") as log:
        Daemon(log).serve()
