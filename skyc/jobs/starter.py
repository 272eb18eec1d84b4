"""Starting the managed-jobs controller and handing jobs to it.

The controller (:mod:`skyc.jobs.daemon`) is started as ``python -m skyc jobs
controller`` in a session of its own (it outlives the terminal), with stdin from
/dev/null and its output in ``$SKYC_HOME/logs/managed/daemon.log``. Its environment is
this one's without the job's secrets: they go over the controller's socket only.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Collection, Mapping

from skyc.errors import StateError
from skyc.jobs import handoff
from skyc.model.managed_jobs import ManagedJob
from skyc.state.managed_jobs import ManagedJobStore

HANDOFF_TIMEOUT_S = 60.0


def spawn(hide: Collection[str] = ()) -> subprocess.Popen[bytes]:
    """Start a controller process; ``hide``: names and values kept out of its
    environment, as are the names of every unfinished job's secrets."""
    from skyc.jobs.daemon import daemon_log_path

    hidden = {*hide, *_secret_names()}
    env = {k: v for k, v in os.environ.items() if k not in hidden and v not in hidden}
    env["PYDANTIC_DISABLE_PLUGINS"] = "1"
    with daemon_log_path().open("ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "skyc", "jobs", "controller"], stdin=subprocess.DEVNULL,
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env)


def _secret_names() -> set[str]:
    store = ManagedJobStore()
    try:
        return {name for job in store.all_jobs() if not job.done
                for name in (*job.spec.from_stdin, *job.spec.stdin_envs)}
    finally:
        store.close()


def hand_off(job_id: int, secrets: Mapping[str, str], envs: Mapping[str, str],
             timeout: float = HANDOFF_TIMEOUT_S) -> int:
    """Give the job (and its secrets) to the running controller, starting one when none
    answers; the controller's pid."""
    doc = {"op": "supervise", "job": job_id, "secrets": dict(secrets), "envs": dict(envs)}
    hide = {*secrets, *secrets.values(), *envs, *envs.values()}
    deadline = time.monotonic() + timeout
    started: subprocess.Popen[bytes] | None = None
    while True:
        try:
            return int(handoff.request(doc, timeout=30.0)["pid"])
        except OSError:
            pass
        if started is None or started.poll() is not None:
            started = spawn(hide)
        if time.monotonic() > deadline:
            raise StateError(
                f"managed job {job_id}: the managed-jobs controller did not start",
                hint="see $SKYC_HOME/logs/managed/daemon.log; then run "
                "`skyc jobs controller --restart`")
        time.sleep(0.1)


def unsupervised(jobs: list[ManagedJob], now: float | None = None) -> list[ManagedJob]:
    """Unfinished jobs no live controller holds: a free or expired lease, or one
    whose holder was a process of this machine that is gone."""
    from skyc.jobs.lease import controller_alive

    return [j for j in jobs if not j.done and not controller_alive(j, now)]


def revive() -> tuple[int, int] | None:
    """Start the controller when unfinished jobs have none and no controller answers:
    (its pid, how many jobs) when one was started, else None."""
    store = ManagedJobStore()
    try:
        orphans = unsupervised(store.all_jobs())
    finally:
        store.close()
    if not orphans or handoff.ping() is not None:
        return None
    return spawn().pid, len(orphans)


def ensure_running(timeout: float = HANDOFF_TIMEOUT_S) -> tuple[int, bool]:
    """The running controller's pid, starting one if none answers: (pid, started)."""
    pid = handoff.ping()
    if pid is not None:
        return pid, False
    deadline = time.monotonic() + timeout
    started = spawn()
    while (pid := handoff.ping()) is None:
        if started.poll() is not None:
            started = spawn()
        if time.monotonic() > deadline:
            raise StateError("the managed-jobs controller did not start",
                             hint="see $SKYC_HOME/logs/managed/daemon.log")
        time.sleep(0.1)
    return pid, True
