"""The load balancer in this process, in front of real HTTP servers on loopback (the
replicas' program, :mod:`tests.serve.app`, in threads; a socket that closes every
connection unanswered; a port nothing listens on). Nothing is mocked."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Mapping, Sequence

import aiohttp
import pytest

from skyc.serve.balancer import Balancer, Upstream
from skyc.serve.policies import LeastLoad, RoundRobin
from tests.serve.conftest import closed_port


def _hanging_up() -> tuple[str, threading.Event]:
    """A server that accepts each connection, reads the request and closes it unanswered
    (a replica dying before its first byte)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    stop = threading.Event()

    def serve() -> None:
        sock.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                continue
            conn.recv(65536)
            conn.close()
        sock.close()

    threading.Thread(target=serve, daemon=True).start()
    return f"http://127.0.0.1:{sock.getsockname()[1]}", stop


async def _with_balancer(upstreams: list[Upstream], policy: RoundRobin,
                         failures: list[tuple[int, str]], body: object) -> object:
    balancer = Balancer(policy, lambda r, why: failures.append((r, why)), "test")
    balancer.set_upstreams(upstreams)
    port = closed_port()
    await balancer.start("127.0.0.1", port)
    try:
        async with aiohttp.ClientSession() as client:
            return await body(client, f"http://127.0.0.1:{port}", balancer)  # type: ignore[operator]
    finally:
        await balancer.stop()


def _run(upstreams: list[Upstream], body: object, policy: RoundRobin | None = None,
         failures: list[tuple[int, str]] | None = None) -> object:
    return asyncio.run(_with_balancer(upstreams, policy or RoundRobin(),
                                      [] if failures is None else failures, body))


async def _texts(client: aiohttp.ClientSession, url: str, count: int) -> list[str]:
    out = []
    for _ in range(count):
        async with client.get(url) as answer:
            out.append(await answer.text())
    return out


def test_round_robin_takes_the_replicas_in_turn(servers: list[str]) -> None:
    ups = [Upstream(1, servers[0]), Upstream(2, servers[1])]

    async def body(client: aiohttp.ClientSession, url: str, balancer: Balancer) -> object:
        first = await _texts(client, url + "/", 4)
        async with client.post(url + "/echo?a=1&b=%20", data=b"x" * 100_000) as answer:
            echoed = await answer.read()
        return first, echoed, balancer.qps(60.0)

    first, echoed, qps = _run(ups, body)  # type: ignore[misc]
    assert first == ["replica ?\n"] * 4   # both servers answer (they share the app)
    assert echoed == b"x" * 100_000
    assert qps == pytest.approx(5 / 60.0)


def test_least_load_sends_to_the_replica_with_fewer_requests_in_flight(
        servers: list[str]) -> None:
    ups = [Upstream(1, servers[0]), Upstream(2, servers[1])]

    async def body(client: aiohttp.ClientSession, url: str, balancer: Balancer) -> object:
        slow = asyncio.ensure_future(client.get(url + "/sleep?s=1"))
        await asyncio.sleep(0.2)
        busy = next(r for r, n in balancer.inflight.items() if n)
        for _ in range(4):
            async with client.get(url + "/") as answer:
                await answer.read()
        (await slow).release()
        return busy

    policy = Recording()
    busy = _run(ups, body, policy)
    # The slow request went to one replica; every quick one after it to the other.
    assert policy.picks[0] == busy and policy.picks[1:] == [3 - busy] * 4, policy.picks


class Recording(LeastLoad):
    def __init__(self) -> None:
        super().__init__()
        self.picks: list[int] = []

    def pick(self, replicas: Sequence[int], inflight: Mapping[int, int]) -> int:
        choice = super().pick(replicas, inflight)
        self.picks.append(choice)
        return choice


def test_a_refused_or_hung_up_request_is_sent_to_another_replica(servers: list[str]) -> None:
    hung_url, stop = _hanging_up()
    dead, hung = closed_port(), 3
    ups = [Upstream(1, f"http://127.0.0.1:{dead}"), Upstream(hung, hung_url),
           Upstream(2, servers[1])]
    failures: list[tuple[int, str]] = []

    async def body(client: aiohttp.ClientSession, url: str, balancer: Balancer) -> object:
        return await _texts(client, url + "/", 6), balancer.retried

    try:
        texts, retried = _run(ups, body, failures=failures)  # type: ignore[misc]
    finally:
        stop.set()
    assert texts == ["replica ?\n"] * 6
    assert retried >= 4
    # The refusing replica is reported (out of rotation); one that hung up is left to
    # its readiness probe.
    assert {r for r, _ in failures} == {1}
    assert all("Connect" in why for _, why in failures)


def test_no_ready_replica_is_503_with_retry_after() -> None:
    async def body(client: aiohttp.ClientSession, url: str, balancer: Balancer) -> object:
        async with client.get(url + "/") as answer:
            return answer.status, answer.headers.get("Retry-After"), await answer.text()

    code, retry, text = _run([], body)  # type: ignore[misc]
    assert (code, retry) == (503, "1") and "no ready replica" in text


def test_a_stream_is_relayed_chunk_by_chunk(servers: list[str]) -> None:
    async def body(client: aiohttp.ClientSession, url: str, balancer: Balancer) -> object:
        got = []
        async with client.get(url + "/stream?n=4&gap=0.4") as answer:
            async for line in answer.content:
                if line.startswith(b"data: "):
                    got.append((float(line.split()[2]), time.time()))
        return got

    got = _run([Upstream(1, servers[0])], body)
    assert isinstance(got, list) and len(got) == 4
    for produced, received in got:
        assert received - produced < 0.25, got   # not held back until the end (1.2 s)
    assert got[-1][1] - got[0][1] > 1.0


def test_an_answer_broken_off_midway_is_not_completed() -> None:
    """The replica sends its headers and part of a chunked body, then dies: the
    client must see an error, never a whole-looking answer."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()

    def serve() -> None:
        conn, _ = sock.accept()
        conn.recv(65536)
        conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
        time.sleep(0.2)
        conn.close()

    threading.Thread(target=serve, daemon=True).start()

    async def body(client: aiohttp.ClientSession, url: str, balancer: Balancer) -> object:
        async with client.get(url + "/") as answer:
            try:
                await answer.read()
            except aiohttp.ClientPayloadError as exc:
                return exc
            return None

    try:
        outcome = _run([Upstream(1, f"http://127.0.0.1:{sock.getsockname()[1]}")], body)
    finally:
        sock.close()
    assert isinstance(outcome, aiohttp.ClientPayloadError)
