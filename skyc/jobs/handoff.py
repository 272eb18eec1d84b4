"""The managed-jobs controller's Unix socket: how a job (and its secrets) reaches the
one controller process of this ``SKYC_HOME``.

The socket is ``$SKYC_HOME/jobs/controller.sock``, mode 0600 in a 0700 directory, and
the controller answers only peers of its own user (``SO_PEERCRED``). A request is one
JSON line, the answer one JSON line:

    {"op": "ping"}                                        -> {"ok": true, "pid": N}
    {"op": "supervise", "job": ID, "secrets": {..}, "envs": {..}}
                                                          -> {"ok": true, "pid": N}

Secrets exist only in the two processes' memory and on this socket: never on disk, in
the state database, a log, or any process's argv or environment.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from skyc.errors import StateError

SOCKET_NAME = "controller.sock"
_MAX_REQUEST = 1 << 20
_SUN_PATH_MAX = 100  # sockaddr_un holds 108 bytes; longer paths go through a dir fd


def jobs_dir() -> Path:
    """``$SKYC_HOME/jobs``, made 0700 (the socket and the controller's lock live here)."""
    from skyc.settings.config import skyc_home

    path = skyc_home() / "jobs"
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o700)
    return path


@contextlib.contextmanager
def _address(path: Path) -> Iterator[str]:
    """An address for ``path`` that fits in a sockaddr_un: itself, or the same file
    reached through an open descriptor of its directory."""
    if len(os.fsencode(path)) <= _SUN_PATH_MAX:
        yield str(path)
        return
    fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{fd}/{path.name}"
    finally:
        os.close(fd)


def socket_path() -> Path:
    return jobs_dir() / SOCKET_NAME


def listen(path: Path) -> socket.socket:
    """Bind the controller's socket at ``path`` (replacing a stale one), mode 0600."""
    path.unlink(missing_ok=True)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with _address(path) as address:
        server.bind(address)
    path.chmod(0o600)
    server.listen(64)
    server.setblocking(False)
    return server


def same_user(conn: socket.socket) -> bool:
    """True when the peer process runs as this process's user."""
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _, uid, _ = struct.unpack("3i", creds)
    return bool(uid == os.getuid())


def read_line(conn: socket.socket) -> dict[str, Any]:
    """One JSON object ending with a newline; ValueError when it is anything else."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
        if len(data) > _MAX_REQUEST:
            raise ValueError("request too large")
    doc = json.loads(data.decode() or "null")
    if not isinstance(doc, dict):
        raise ValueError("expected a JSON object")
    return doc


def write_line(conn: socket.socket, doc: dict[str, Any]) -> None:
    conn.sendall(json.dumps(doc).encode() + b"\n")


def request(doc: dict[str, Any], timeout: float = 10.0) -> dict[str, Any]:
    """Send one request to the running controller; its answer. OSError when no
    controller listens (or it went away before answering)."""
    path = socket_path()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(timeout)
        with _address(path) as address:
            conn.connect(address)
        write_line(conn, doc)
        try:
            answer = read_line(conn)
        except ValueError:
            raise ConnectionResetError("the controller closed the connection") from None
    if not answer.get("ok"):
        raise StateError(f"the managed-jobs controller refused: {answer.get('error')}")
    return answer


def ping(timeout: float = 2.0) -> int | None:
    """The running controller's pid, or None when none answers."""
    try:
        return int(request({"op": "ping"}, timeout)["pid"])
    except (OSError, StateError, KeyError, TypeError, ValueError):
        return None
