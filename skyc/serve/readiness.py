"""The readiness probe: ``GET path`` (``POST`` with ``post_data`` as JSON), the
probe's headers, ``timeout_seconds``; a replica passes on a 200, as in SkyPilot."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import aiohttp

from skyc.serve.spec import Readiness


@dataclass(frozen=True)
class ProbeResult:
    ok: bool
    why: str
    refused: bool = False   # nothing listens there (as when its processes died)


async def probe(session: aiohttp.ClientSession, url: str, readiness: Readiness) -> ProbeResult:
    method = "GET" if readiness.post_data is None else "POST"
    timeout = aiohttp.ClientTimeout(total=readiness.timeout_s)
    try:
        async with session.request(method, url + readiness.path, json=readiness.post_data,
                                   headers=readiness.headers, timeout=timeout,
                                   allow_redirects=False) as answer:
            await answer.read()
            if answer.status == 200:
                return ProbeResult(True, "200")
            return ProbeResult(False, f"{method} {readiness.path} answered {answer.status}")
    except aiohttp.ClientConnectorError as exc:
        return ProbeResult(False, f"{method} {readiness.path}: connection refused ({exc.os_error})",
                           refused=True)
    except asyncio.TimeoutError:
        return ProbeResult(False, f"{method} {readiness.path}: no answer within "
                           f"{readiness.timeout_s:g} s (timeout_seconds)")
    except aiohttp.ClientError as exc:
        return ProbeResult(False, f"{method} {readiness.path}: {type(exc).__name__}: {exc}")
