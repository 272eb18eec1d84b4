"""Starting a service's controller process, and starting it again when it died.

The controller is ``python -m skyc serve controller NAME`` in a session of its own,
stdin from /dev/null, its output appended to the service's ``controller.log``, with
this process's environment (a task's secrets are read from it again).
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator

from skyc.errors import SkycError
from skyc.serve.daemon import controller_pid, log_file
from skyc.serve.names import HOST, serve_root

START_TIMEOUT_S = 60.0


def spawn(name: str) -> subprocess.Popen[bytes]:
    import os

    env = dict(os.environ)
    env["PYDANTIC_DISABLE_PLUGINS"] = "1"
    with log_file(name).open("ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "skyc", "serve", "controller", name],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True, env=env, cwd=serve_root())


def _answers(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=1.0):
            return True
    except OSError:
        return False


def start(name: str, port: int, timeout: float = START_TIMEOUT_S) -> int:
    """Start the controller and wait until its endpoint accepts connections; its pid."""
    proc = spawn(name)
    deadline = time.monotonic() + timeout
    while True:
        pid = controller_pid(name)
        if pid is not None and _answers(port):
            return pid
        if proc.poll() is not None and controller_pid(name) is None:
            raise SkycError(f"the controller of service {name} exited at start "
                            f"(code {proc.returncode})",
                            hint="its log: " + _tail(name))
        if time.monotonic() > deadline:
            raise SkycError(f"the controller of service {name} did not open its endpoint "
                            f"within {timeout:g} s", hint="its log: " + _tail(name))
        time.sleep(0.05)


def _tail(name: str) -> str:
    try:
        lines = log_file(name).read_text(errors="replace").splitlines()[-5:]
    except OSError:
        return str(log_file(name))
    return " | ".join(lines) or str(log_file(name))


def revive() -> Iterator[tuple[str, int | SkycError]]:
    """Start the controller of every service that is not being taken down and has
    none running: (service, its pid, or why it did not start) for each."""
    from skyc.serve.store import ServeStore
    from skyc.state.service_claims import db_path

    if not db_path().exists():
        return
    with ServeStore() as store:
        dead = [s for s in store.services()
                if not s.down_requested and controller_pid(s.name) is None]
    for service in dead:
        try:
            yield service.name, start(service.name, service.port)
        except SkycError as exc:
            yield service.name, exc
