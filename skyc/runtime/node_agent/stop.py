"""Stopping jobs: ``cancel`` (one job) and ``stop-all`` (every job, before the node
goes), by process group and by the job mark every process of a job inherits."""

from __future__ import annotations

import os
import sys
import time

from skyc.runtime.node_agent.base import (
    PHASES,
    Args,
    cancel_reason,
    job_dir,
    jobs_dir,
    marked_pids,
    read_text,
    write_atomic,
)
from skyc.runtime.node_agent.mounts import release_mounts
from skyc.runtime.node_agent.status import group_alive

# ---------------------------------------------------------------- stopping jobs


def _stop(groups: list[int], job_id: int | None) -> None:
    """TERM, then KILL, the process groups and every process marked with the job."""
    import contextlib
    import signal

    for sig in (signal.SIGTERM, signal.SIGKILL):
        pids = marked_pids(job_id)
        for pgid in groups:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, sig)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        deadline = time.time() + 3
        while time.time() < deadline:
            groups = [g for g in groups if group_alive(g)]
            if not groups and not marked_pids(job_id):
                return
            time.sleep(0.05)


def _live_groups(job_id: int) -> list[int]:
    d = job_dir(job_id)
    groups = []
    for phase in PHASES:
        text = read_text(os.path.join(d, phase + ".pgid"))
        if text and int(text) > 0 and not os.path.exists(os.path.join(d, phase + ".exit")):
            groups.append(int(text))
    return groups


def cmd_cancel(args: Args) -> int:
    import json

    d = job_dir(args.job)
    if not os.path.isdir(d):
        sys.stderr.write(f"no job {args.job} on this node\n")
        return 2
    if os.path.exists(os.path.join(d, "run.exit")):
        _stop([], args.job)  # what the finished job left running (daemons)
        print(json.dumps({"job_id": args.job, "cancelled": False, "reason": "finished"}))
        return 0
    # marked first: a phase that has not started yet will not start
    if cancel_reason(args.job) is None:
        write_atomic(os.path.join(d, "cancelled"), args.reason)
    _stop(_live_groups(args.job), args.job)
    print(json.dumps({"job_id": args.job, "cancelled": True}))
    return 0


def cmd_stop_all(args: Args) -> int:
    """End every job of this node (before the node is destroyed): mark each unfinished
    job cancelled, then stop their process groups and every marked process; then
    unmount its buckets (a mount would outlive the node on a machine it shares)."""
    import contextlib
    import json

    ids = sorted(int(n) for n in os.listdir(jobs_dir()) if n.isdigit()) if os.path.isdir(
        jobs_dir()) else []
    groups: list[int] = []
    stopped = []
    for job_id in ids:
        d = job_dir(job_id)
        if not os.path.exists(os.path.join(d, "run.exit")):
            if cancel_reason(job_id) is None:
                with contextlib.suppress(OSError):
                    write_atomic(os.path.join(d, "cancelled"), "user")
            stopped.append(job_id)
        groups += _live_groups(job_id)
    _stop(groups, None)
    released, problems = release_mounts()
    for problem in problems:
        sys.stderr.write(f"{problem}\n")
    print(json.dumps({"stopped": stopped, "left": len(marked_pids(None)),
                      "mounts_released": released}))
    return 0


