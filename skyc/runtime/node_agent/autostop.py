"""Autostop: the idle watch (a daemon started by ``autostop set``) and the action it
runs once the node has been idle long enough."""

from __future__ import annotations

import os
import sys
import time

from skyc.runtime.node_agent.base import Args, jobs_dir, read_text, skyc_dir, write_atomic
from skyc.runtime.node_agent.status import job_status

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


# ---------------------------------------------------------------- autostop

AUTOSTOP_FILE = "autostop.json"
_BUSY = ("PENDING", "SETTING_UP", "SETUP_DONE", "RUNNING")
STALE_PENDING_S = 600.0  # a job allocated this long ago that never started holds nothing


def _autostop_path() -> str:
    return os.path.join(skyc_dir(), AUTOSTOP_FILE)


def load_autostop() -> dict[str, Any] | None:
    import json

    text = read_text(_autostop_path())
    try:
        return json.loads(text) if text else None
    except ValueError:
        return None


def busy_jobs() -> int:
    """Jobs of this node that run or wait to run (a stale allocation does not count)."""
    ids = sorted(int(n) for n in os.listdir(jobs_dir()) if n.isdigit()) if os.path.isdir(
        jobs_dir()) else []
    count = 0
    for job_id in ids:
        info = job_status(job_id)
        if info["status"] not in _BUSY or info["cancelled"] is not None:
            continue
        age = time.time() - float(info.get("submitted") or 0)
        if info["status"] == "PENDING" and age > STALE_PENDING_S:
            continue
        count += 1
    return count


def ssh_sessions() -> int:
    """Interactive SSH sessions of this user (``sshd: user@pts/N``); skyc's own commands
    run without a terminal (``@notty``) and do not count."""
    uid = os.getuid()
    count = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                argv0 = fh.read().split(b"\0")[0]
            owner = os.stat(f"/proc/{name}").st_uid
        except OSError:
            continue
        if owner == uid and argv0.startswith(b"sshd:") and b"@pts" in argv0:
            count += 1
    return count


def autostop_busy(config: dict[str, Any]) -> bool:
    wait_for = config.get("wait_for") or "jobs_and_ssh"
    if wait_for == "none":
        return False
    if busy_jobs():
        return True
    return wait_for == "jobs_and_ssh" and ssh_sessions() > 0


def autostop_watch(config_id: str) -> int:
    """The autostop daemon: once the node has been idle for the configured time, record
    it and run the configured action. Ends when autostop is cancelled or set again."""
    import json

    last_active = time.time()
    while True:
        config = load_autostop()
        if config is None or config.get("id") != config_id:
            return 0
        now = time.time()
        if autostop_busy(config):
            last_active = now
        elif now - max(last_active, float(config["set_at"])) >= float(config["idle_seconds"]):
            record = {"id": config_id, "fired_at": now,
                      "action": "down" if config.get("down") else "stop"}
            write_atomic(os.path.join(skyc_dir(), "autostop.fired"), json.dumps(record))
            import subprocess

            with open(os.path.join(skyc_dir(), "autostop.log"), "ab") as log:
                subprocess.run(["bash", "-c", config["action"]], cwd="/",
                               stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                               check=False)
            return 0
        time.sleep(float(config.get("check_s") or 10))


def cmd_autostop(args: Args) -> int:
    import contextlib
    import json
    import subprocess
    import uuid

    path = _autostop_path()
    if args.action == "watch":
        return autostop_watch(args.id)
    if args.action == "cancel":
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        print(json.dumps({"cancelled": True}))
        return 0
    if args.action == "status":
        fired = read_text(os.path.join(skyc_dir(), "autostop.fired"))
        print(json.dumps({"config": load_autostop(), "fired": json.loads(fired) if fired
                          else None, "busy_jobs": busy_jobs()}, sort_keys=True))
        return 0
    spec = json.loads(sys.stdin.read() or "{}")
    idle = float(spec["idle_seconds"])
    config = {"id": uuid.uuid4().hex, "set_at": time.time(), "idle_seconds": idle,
              "wait_for": spec.get("wait_for") or "jobs_and_ssh", "down": bool(spec.get("down")),
              "action": spec["action"],
              "check_s": float(spec.get("check_s") or min(60.0, max(1.0, idle / 10)))}
    os.makedirs(skyc_dir(), exist_ok=True)
    write_atomic(path, json.dumps(config, sort_keys=True))
    with contextlib.suppress(FileNotFoundError):
        os.unlink(os.path.join(skyc_dir(), "autostop.fired"))
    # __file__: the agent's one file, which this code runs from (see agent_bundle)
    proc = subprocess.Popen(
        [sys.executable, "-S", os.path.abspath(__file__), "autostop", "watch",
         "--id", config["id"]], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, cwd="/", start_new_session=True)
    print(json.dumps({"set": True, "pid": proc.pid, "id": config["id"]}))
    return 0


