"""Serve fixtures: ``python -m skyc`` as real subprocesses on the ``local`` infra (real
terraform for each replica's stack, the real node agent, real controller processes),
a stdlib HTTP server as each replica's program (:mod:`tests.serve.app`); nothing left
running afterwards."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import REPO, Skyc
from tests.serve.app import Handler

APP = Path(__file__).with_name("app.py")


def service_yaml(service: str, *, infra: str = "local", extra: str = "") -> str:
    """A task whose replicas run :mod:`tests.serve.app`; ``service`` is the body of
    its ``service:`` section (indented two spaces)."""
    return (f"name: web\nservice:\n{service}resources:\n  infra: {infra}\n{extra}"
            f"run: exec {sys.executable} {APP}\n")


def make_runner(root: Path, **env: str) -> Skyc:
    cwd, home = root / "project", root / "skyc_home"
    cwd.mkdir(parents=True)
    (root / "user_home").mkdir()
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "GOOGLE_"))}
    base.update({"SKYC_HOME": str(home), "PYTHONPATH": str(REPO), "HOME": str(root / "user_home"),
                 "NO_COLOR": "1", "COLUMNS": "200", "SKYC_SERVE_POLL_S": "0.3",
                 "SKYC_SERVE_RETRY_TEAR_S": "2", **env})
    return Skyc(cwd, home, base)


def controller_pids(home: Path) -> list[int]:
    pids = []
    for lock in (home / "serve").glob("*/controller.lock"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            pids.append(int(lock.read_text().split()[0]))
    return pids


def node_pids(home: Path) -> list[int]:
    """Every process of a local node of this SKYC_HOME (they run with HOME there)."""
    want = f"HOME={home}/clusters/".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            env = Path(f"/proc/{name}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(e.startswith(want) for e in env):
            found.append(int(name))
    return found


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def cleanup(runner: Skyc) -> None:
    """Take every service down; then kill whatever is left (a failed test's)."""
    runner("serve", "down", "--all", "-y", timeout=180)
    for pid in controller_pids(runner.home) + node_pids(runner.home):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    if (runner.home / "clusters").is_dir():
        for ws in (runner.home / "clusters").iterdir():
            if (ws / "cluster.json").exists():
                runner("destroy", ws.name, "--yes", timeout=120)


@pytest.fixture
def runner(tmp_path: Path) -> Iterator[Skyc]:
    skyc = make_runner(tmp_path)
    try:
        yield skyc
    finally:
        cleanup(skyc)


def status(runner: Skyc, name: str) -> dict[str, Any]:
    result = runner.ok("serve", "status", name, "--format", "json")
    doc: dict[str, Any] = json.loads(result.stdout)["services"][0]
    return doc


def wait_status(runner: Skyc, name: str, check: Callable[[dict[str, Any]], bool],
                timeout: float = 60.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        doc = status(runner, name)
        if check(doc):
            return doc
        if time.monotonic() > deadline:
            log = runner("serve", "logs", name, "--controller").stdout
            raise AssertionError(f"service {name} never got there: {doc}\n{log}")
        time.sleep(0.3)


def get(url: str, timeout: float = 10.0) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as answer:
        return str(answer.read().decode())


def ready(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in doc["replicas"] if r["status"] == "READY"]


@pytest.fixture
def servers() -> Iterator[list[str]]:
    """Two replicas' servers (:mod:`tests.serve.app` in threads of this process); their
    URLs."""
    started = [ThreadingHTTPServer(("127.0.0.1", 0), Handler) for _ in range(2)]
    for server in started:
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    yield [f"http://127.0.0.1:{s.server_address[1]}" for s in started]
    for server in started:
        server.shutdown()
        server.server_close()


def closed_port() -> int:
    """A port of 127.0.0.1 nothing listens on (as far as anyone can tell)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
