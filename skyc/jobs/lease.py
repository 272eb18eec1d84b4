"""The lease that lets one controller, and only one, supervise a managed job.

A controller takes the lease for ``ttl`` seconds and a heartbeat thread renews it
every ``ttl / 3``. Another controller gets it only once it has expired: after the
holder died (or lost the database for longer than the ttl, in which case the holder
counts it lost and stops supervising). A renewal the database could not answer for a
moment (busy) is tried again.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
import uuid
from pathlib import Path
from types import TracebackType

from skyc.errors import LeaseHeld, SkycError
from skyc.model.managed_jobs import ManagedJob
from skyc.state.managed_jobs import ManagedJobStore

DEFAULT_TTL_S = 30.0


def lease_ttl() -> float:
    raw = os.environ.get("SKYC_JOBS_LEASE_S")
    try:
        return max(1.0, float(raw)) if raw else DEFAULT_TTL_S
    except ValueError:
        return DEFAULT_TTL_S


class Lease:
    def __init__(self, store: ManagedJobStore, job_id: int, ttl: float | None = None) -> None:
        self.store = store
        self.job_id = job_id
        self.ttl = ttl or lease_ttl()
        self.owner = f"{os.uname().nodename}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def acquire(self, wait_s: float = 0.0) -> None:
        """Take the lease, waiting up to ``wait_s`` for another holder's to expire."""
        deadline = time.monotonic() + wait_s
        while not self.store.take_lease(self.job_id, self.owner, self.ttl, os.getpid()):
            if time.monotonic() >= deadline:
                job = self.store.require(self.job_id)
                left = max(0.0, (job.lease_until or 0) - time.time())
                raise LeaseHeld(
                    f"managed job {self.job_id} is supervised by another controller "
                    f"(pid {job.controller_pid}); its lease runs {left:.0f} s more",
                    hint="only one controller supervises a job; if that one died, run "
                    "`skyc jobs controller` again once the lease has expired")
            time.sleep(min(0.5, self.ttl / 4))
        self._thread = threading.Thread(target=self._beat, name="lease", daemon=True)
        self._thread.start()

    def _beat(self) -> None:
        """Renew every ``ttl / 3``. A renewal refused means another controller has the
        lease; one the database could not answer (busy, failing) is tried again, and
        the lease counts as lost once it has gone unrenewed for its whole ttl."""
        until = time.monotonic() + self.ttl
        while not self._stop.wait(self.ttl / 3):
            try:
                ok: bool | None = self.store.take_lease(self.job_id, self.owner, self.ttl,
                                                        os.getpid())
            except (SkycError, sqlite3.Error):
                ok = None
            if ok:
                until = time.monotonic() + self.ttl
            elif ok is False or time.monotonic() >= until:
                self.lost.set()
                return

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if not self.lost.is_set():
            self.store.release_lease(self.job_id, self.owner)

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()


def holder_gone(job: ManagedJob) -> bool:
    """True when the job's lease holder was a process of this machine that has died."""
    pid = job.controller_pid
    if job.lease_owner is None or pid is None:
        return False
    return job.lease_owner.startswith(os.uname().nodename + ":") and not _running(pid)


def _running(pid: int) -> bool:
    """True while ``pid`` runs on this machine (a zombie has stopped running)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def controller_alive(job: ManagedJob, now: float | None = None) -> bool:
    """True while a controller holds the job's lease: it has not expired, and its
    holder, when it is a process of this machine, still runs."""
    now = time.time() if now is None else now
    return (job.lease_owner is not None and (job.lease_until or 0) > now
            and not holder_gone(job))
