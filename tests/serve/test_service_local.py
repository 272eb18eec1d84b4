"""One service of two replicas on ``local``, end to end: real ``python -m skyc serve``
processes, the real controller process and load balancer, the real terraform binary
for each replica's stack and the real node agent; each replica a stdlib HTTP server
(:mod:`tests.serve.app`). A replica's death is simulated by SIGKILLing every process
of its node; nothing is mocked.

The tests share the service (module scope) and run in order: it answers, streams,
survives its controller's restart, loses no request when a replica dies, and goes
down leaving nothing behind.
"""

from __future__ import annotations

import http.client
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import Skyc
from tests.serve.conftest import (
    alive,
    cleanup,
    controller_pids,
    get,
    make_runner,
    node_pids,
    ready,
    service_yaml,
    status,
    wait_status,
)

# One worker runs the module's tests, in order, on the one service they share.
pytestmark = pytest.mark.xdist_group("serve-local")

NAME = "web"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Skyc, str]]:
    runner = make_runner(tmp_path_factory.mktemp("serve"))
    runner.write("web.yaml", service_yaml(
        "  readiness_probe:\n    path: /health\n    initial_delay_seconds: 60\n"
        "  replicas: 2\n  load_balancing_policy: round_robin\n"))
    try:
        up = runner.ok("serve", "up", "web.yaml", "-n", NAME, "-y")
        name, url = up.stdout.split()
        assert name == NAME and url.startswith("http://127.0.0.1:"), up.stdout
        wait_status(runner, NAME, lambda d: len(ready(d)) == 2)
        yield runner, url
    finally:
        cleanup(runner)


def test_the_endpoint_answers_from_both_replicas(served: tuple[Skyc, str]) -> None:
    runner, url = served
    answers = {get(url + "/") for _ in range(6)}
    assert answers == {"replica 1\n", "replica 2\n"}   # round robin, each its own id
    request = http.client.HTTPConnection(url.removeprefix("http://"), timeout=10)
    request.request("POST", "/echo?x=1", body=b'{"prompt": "hi"}',
                    headers={"Content-Type": "application/json"})
    answer = request.getresponse()
    assert answer.status == 200 and answer.read() == b'{"prompt": "hi"}'
    assert answer.getheader("Content-Type") == "application/json"
    assert runner.ok("serve", "status", "--endpoint", NAME).stdout.strip() == url
    doc = status(runner, NAME)
    assert doc["status"] == "READY" and doc["endpoint"] == url
    assert {r["cluster"] for r in doc["replicas"]} == {"web-1", "web-2"}
    assert set(runner.clusters()) == {"web-1", "web-2"}
    ports = {r["port"] for r in doc["replicas"]}
    assert len(ports) == 2   # replicas share this host: each has its own port
    table = runner.ok("serve", "status").stdout
    assert "web-1" in table and "READY" in table and url in table


def test_a_stream_arrives_chunk_by_chunk(served: tuple[Skyc, str]) -> None:
    _, url = served
    conn = http.client.HTTPConnection(url.removeprefix("http://"), timeout=10)
    sent = time.time()
    conn.request("GET", "/stream?n=4&gap=0.5")
    answer = conn.getresponse()
    assert answer.getheader("Content-Type") == "text/event-stream"
    arrivals: list[tuple[float, float]] = []   # (when produced, when received)
    while len(arrivals) < 4:
        line = answer.fp.readline()
        if line.startswith(b"data: "):
            arrivals.append((float(line.split()[2]), time.time()))
    # Each event reaches the client as its replica writes it, not when the answer ends.
    first_received = arrivals[0][1]
    # (Held back until the end, the first would come 1.5 s after it was produced.)
    assert first_received - sent < 0.5, arrivals
    for produced, received in arrivals:
        assert received - produced < 0.3, arrivals
    assert arrivals[-1][1] - first_received > 1.2, arrivals


def test_a_restarted_controller_serves_on_without_relaunching(
        served: tuple[Skyc, str]) -> None:
    runner, url = served
    before = status(runner, NAME)
    [pid] = controller_pids(runner.home)
    os.kill(pid, signal.SIGKILL)
    assert _gone(pid)
    with pytest.raises(OSError):
        get(url + "/", timeout=2)   # the endpoint went with its process

    shown = runner.ok("serve", "status", NAME)
    assert "restarted it" in shown.stderr

    assert {get(url + "/") for _ in range(4)} == {"replica 1\n", "replica 2\n"}
    after = status(runner, NAME)
    assert after["controller_pid"] not in (None, pid)
    keep = ("id", "cluster", "port", "job_id", "launched_at", "ready_at")
    assert [{k: r[k] for k in keep} for r in after["replicas"]] == \
        [{k: r[k] for k in keep} for r in before["replicas"]]
    assert set(runner.clusters()) == {"web-1", "web-2"}


def test_a_dying_replica_loses_no_request_and_is_replaced(served: tuple[Skyc, str]) -> None:
    runner, url = served
    results: list[str] = []
    failures: list[str] = []

    def load() -> None:
        for _ in range(150):
            try:
                results.append(get(url + "/"))
            except OSError as exc:
                failures.append(str(exc))
            time.sleep(0.01)

    loader = threading.Thread(target=load)
    loader.start()
    while len(results) < 30:
        time.sleep(0.01)
    node = runner.workspace("web-1") / "nodes" / "head"
    killed = [p for p in node_pids(runner.home) if _home(p) == str(node)]
    assert killed
    for pid in killed:
        os.kill(pid, signal.SIGKILL)
    loader.join()

    assert failures == [] and len(results) == 150
    assert results[-10:] != ["replica 1\n"] * 10
    doc = wait_status(runner, NAME, lambda d: [r["id"] for r in ready(d)] == [2, 3])
    dead = next(r for r in doc["replicas"] if r["id"] == 1)
    assert dead["status"] == "FAILED" and "ended" in dead["why"], dead
    assert any("replica 1 listening" in line for line in dead["log_tail"]), dead
    assert set(runner.clusters()) == {"web-2", "web-3"}
    assert get(url + "/") in ("replica 2\n", "replica 3\n")
    logs = runner.ok("serve", "logs", NAME, "1").stdout
    assert "replica 1 listening" in logs


def test_down_leaves_no_process_and_no_cluster(served: tuple[Skyc, str]) -> None:
    runner, url = served
    pids = controller_pids(runner.home) + node_pids(runner.home)
    assert pids

    runner.ok("serve", "down", NAME, "-y")

    assert runner.clusters() == []
    assert not [p for p in pids if alive(p)]
    assert node_pids(runner.home) == []
    assert runner.ok("serve", "status").stdout.strip() == "No services."
    with pytest.raises(OSError):
        get(url + "/", timeout=2)
    assert not (runner.home / "serve" / NAME).exists()


def _home(pid: int) -> str | None:
    try:
        env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return None
    return next((e[5:].decode() for e in env if e.startswith(b"HOME=")), None)


def _gone(pid: int, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True
