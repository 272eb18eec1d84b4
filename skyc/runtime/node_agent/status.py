"""The job table: a job's status, read from its files under ``~/.skyc/jobs/<job>/``."""

from __future__ import annotations

import os

from skyc.runtime.node_agent.base import PHASES, Args, cancel_reason, job_dir, jobs_dir, read_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


# ---------------------------------------------------------------- job table


def group_alive(pgid: int) -> bool:
    if pgid <= 0:
        return False
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def job_status(job_id: int) -> dict[str, Any]:
    import json

    d = job_dir(job_id)
    meta = json.loads(read_text(os.path.join(d, "meta.json")) or "{}")
    info: dict[str, Any] = {"job_id": job_id, "name": meta.get("name"),
                            "submitted": meta.get("submitted"), "exit_code": None,
                            "num_nodes": meta.get("num_nodes"), "client": meta.get("client")}
    reason = cancel_reason(job_id)
    cancelled = reason is not None
    info["cancelled"] = reason
    status = "PENDING"
    for phase in PHASES:
        started = os.path.exists(os.path.join(d, phase + ".pgid"))
        code_text = read_text(os.path.join(d, phase + ".exit"))
        if not started:
            continue
        if code_text is None:
            pgid = int(read_text(os.path.join(d, phase + ".pgid")) or "0")
            alive = pgid > 0 and group_alive(pgid)
            status = ("SETTING_UP" if phase == "setup" else "RUNNING") if alive else "FAILED"
            break
        code = int(code_text)
        info["exit_code"] = code
        if code != 0:
            status = "FAILED_SETUP" if phase == "setup" else "FAILED"
            break
        status = "SUCCEEDED" if phase == "run" else "SETUP_DONE"
    if cancelled and status != "SUCCEEDED":
        # abort: the client gave up before the job ran (a failed sync, a lost client)
        status = "FAILED" if reason == "abort" and status == "PENDING" else "CANCELLED"
    info["status"] = status
    return info


def cmd_status(args: Args) -> int:
    import json

    ids = sorted(int(n) for n in os.listdir(jobs_dir()) if n.isdigit()) if os.path.isdir(
        jobs_dir()) else []
    if args.job is not None:
        ids = [i for i in ids if i == args.job]
    print(json.dumps([job_status(i) for i in ids], sort_keys=True))
    return 0

