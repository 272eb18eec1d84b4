"""The service's endpoint: an asyncio HTTP reverse proxy (aiohttp) on 127.0.0.1.

Each request goes to one ready replica, picked by the service's policy
(:mod:`skyc.serve.policies`). Its body is read whole first, so that a request whose
replica refuses the connection, or closes it before the first byte of an answer
(its processes died), is sent again to another ready replica, each at most once;
a replica that refused it is reported to the controller at once (``on_failure``),
which takes it out of rotation. The answer is relayed chunk by chunk as it arrives (server-sent
events and chunked answers of LLM servers pass through token by token); one that
breaks off midway is broken off to the client too, never completed.

With the service's ``tls:`` the endpoint is HTTPS (the replicas are still reached
over HTTP on loopback, as in SkyPilot). Every request's arrival is counted for the
autoscaler (:meth:`Balancer.qps`). aiohttp is imported with this module, which only
the controller process loads.
"""

from __future__ import annotations

import asyncio
import collections
import ssl
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import aiohttp
from aiohttp import web
from multidict import CIMultiDict
from yarl import URL

from skyc.serve.policies import RoundRobin

# Headers of one connection, not of the request or answer (RFC 9110 7.6.1), and the
# ones the proxy sets itself.
HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization",
                 "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade", "host",
                 "content-length"})
RETRYABLE = (aiohttp.ClientConnectionError, asyncio.TimeoutError)
MAX_BODY = 64 << 20
CONNECT_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class Upstream:
    replica: int
    url: str   # http://127.0.0.1:PORT


FailureCallback = Callable[[int, str], None]


class Balancer:
    def __init__(self, policy: RoundRobin, on_failure: FailureCallback,
                 name: str = "service") -> None:
        self.policy = policy
        self.on_failure = on_failure
        self.name = name
        self.upstreams: dict[int, Upstream] = {}
        self.inflight: collections.Counter[int] = collections.Counter()
        self.arrivals: collections.deque[float] = collections.deque()
        self.retried = 0
        self.session: aiohttp.ClientSession | None = None
        self.runner: web.AppRunner | None = None

    # -- the controller's side ------------------------------------------------

    def set_upstreams(self, upstreams: Sequence[Upstream]) -> None:
        self.upstreams = {u.replica: u for u in upstreams}

    def drop(self, replica: int) -> None:
        self.upstreams.pop(replica, None)

    def qps(self, window_s: float, now: float | None = None) -> float:
        """Requests per second over the last ``window_s`` seconds."""
        now = time.monotonic() if now is None else now
        while self.arrivals and self.arrivals[0] < now - window_s:
            self.arrivals.popleft()
        return len(self.arrivals) / window_s

    async def start(self, host: str, port: int,
                    tls: ssl.SSLContext | None = None) -> None:
        """Listen on ``host:port``: HTTPS with a ``tls`` context (the service's
        ``tls:`` key and certificate), else HTTP."""
        self.session = aiohttp.ClientSession(
            auto_decompress=False, cookie_jar=aiohttp.DummyCookieJar(),
            skip_auto_headers=("User-Agent", "Accept-Encoding", "Accept", "Content-Type"),
            timeout=aiohttp.ClientTimeout(total=None, connect=CONNECT_TIMEOUT_S),
            connector=aiohttp.TCPConnector(limit=0, force_close=False))
        app = web.Application(client_max_size=MAX_BODY)
        app.router.add_route("*", "/{tail:.*}", self.handle)
        self.runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self.runner.setup()
        await web.TCPSite(self.runner, host, port, reuse_address=True,
                          ssl_context=tls).start()

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()
        if self.session is not None:
            await self.session.close()

    # -- requests -------------------------------------------------------------

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.arrivals.append(time.monotonic())
        body = await request.read()
        tried: set[int] = set()
        while True:
            left = [r for r in self.upstreams if r not in tried]
            if not left:
                return self._unavailable(tried)
            replica = self.policy.pick(left, self.inflight)
            tried.add(replica)
            upstream = self.upstreams[replica]
            self.inflight[replica] += 1
            try:
                answer = await self._send(request, upstream, body)
                if answer is not None:
                    return await self._relay(request, answer)
            finally:
                self.inflight[replica] -= 1
            self.retried += 1

    async def _send(self, request: web.Request, upstream: Upstream,
                    body: bytes) -> aiohttp.ClientResponse | None:
        """The replica's answer (its status and headers), or None when it refused the
        connection or closed it before answering (reported to the controller)."""
        assert self.session is not None
        headers = CIMultiDict((k, v) for k, v in request.headers.items() if k.lower() not in HOP)
        peer = request.remote or ""
        forwarded = request.headers.get("X-Forwarded-For")
        headers["X-Forwarded-For"] = f"{forwarded}, {peer}" if forwarded else peer
        try:
            return await self.session.request(
                request.method, URL(upstream.url + request.raw_path, encoded=True),
                headers=headers, data=body or None, allow_redirects=False)
        except RETRYABLE as exc:
            if isinstance(exc, aiohttp.ClientConnectorError):  # nothing listens there
                self.on_failure(upstream.replica, f"{type(exc).__name__}: {exc}")
            return None

    async def _relay(self, request: web.Request,
                     answer: aiohttp.ClientResponse) -> web.StreamResponse:
        out = web.StreamResponse(status=answer.status, reason=answer.reason)
        for key, value in answer.headers.items():
            if key.lower() not in HOP or key.lower() == "content-length":
                out.headers.add(key, value)
        try:
            await out.prepare(request)
            async for chunk in answer.content.iter_any():
                await out.write(chunk)
        except (aiohttp.ClientError, asyncio.TimeoutError, ConnectionError):
            # The replica broke off (or the client left): the client must not take a
            # truncated answer for a whole one.
            answer.close()
            if request.transport is not None:
                request.transport.close()
            return out
        finally:
            answer.release()
        await out.write_eof()
        return out

    def _unavailable(self, tried: set[int]) -> web.Response:
        why = (f"every ready replica of {self.name} failed this request" if tried
               else f"{self.name} has no ready replica yet")
        return web.Response(status=503, text=why + "; retry shortly\n",
                            headers={"Retry-After": "1"})
