"""A service's controller process: ``skyc serve controller NAME`` (started by
:mod:`skyc.serve.starter`, in a session of its own, so it outlives the terminal).

It holds ``$SKYC_HOME/serve/<name>/controller.lock`` (one controller per service; the
kernel drops the lock when it dies), writes ``controller.log`` there, and runs the
service's :class:`~skyc.serve.controller.Controller` until ``serve down`` has taken
the service down.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import time
from pathlib import Path
from typing import IO

from skyc.errors import AlreadyRunning, SkycError
from skyc.serve.names import service_dir

LOCK_NAME = "controller.lock"
LOG_NAME = "controller.log"


def lock_file(name: str) -> Path:
    return service_dir(name) / LOCK_NAME


def log_file(name: str) -> Path:
    return service_dir(name) / LOG_NAME


def controller_pid(name: str) -> int | None:
    """The pid of the service's controller while one holds its lock, else None."""
    try:
        with lock_file(name).open() as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                text = lock_file(name).read_text().split()
                return int(text[0]) if text else -1
            fcntl.flock(fh, fcntl.LOCK_UN)
    except (OSError, ValueError):
        return None
    return None


def _take_lock(name: str) -> IO[str]:
    fh = lock_file(name).open("a+")
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fh.close()
        raise AlreadyRunning(f"the controller of service {name} already runs "
                             f"(pid {controller_pid(name)})") from None
    fh.seek(0)
    fh.truncate()
    fh.write(f"{os.getpid()}\n")
    fh.flush()
    return fh


def serve(name: str) -> None:
    """Run the service's controller until the service is down (or gone)."""
    from skyc.serve.controller import Controller
    from skyc.serve.store import ServeStore

    if not service_dir(name).is_dir():
        raise SkycError(f"no service {name}", hint="see the services with `skyc serve status`")
    lock = _take_lock(name)
    try:
        with ServeStore() as store, log_file(name).open("a", encoding="utf-8") as log:
            service = store.service(name)
            if service is None:
                return
            log.write(f"{time.strftime('%H:%M:%S')} {name}: controller {os.getpid()} started\n")
            log.flush()
            try:
                asyncio.run(Controller(service, store, log).run())
            except (SkycError, OSError) as exc:
                text = exc.message if isinstance(exc, SkycError) else str(exc)
                log.write(f"{time.strftime('%H:%M:%S')} {name}: controller failed: {text}\n")
                store.update_service(name, status="CONTROLLER_FAILED", failure=text)
                raise
    finally:
        lock.close()
