"""A service's endpoint against hitting its replica directly, on loopback.

Starts a real service on the ``local`` infra (``skyc serve up``: the controller
process with its aiohttp load balancer, one replica running tests/serve/app.py, a
stdlib ``ThreadingHTTPServer``), then, with an asyncio aiohttp client as the load
generator, for the replica's port and for the endpoint:

1. requests per second at ``--concurrency`` (32) connections, ``--requests`` GETs of
   a small answer;
2. latency, one request at a time (``--sequential`` of them): p50 and p99, and what
   the load balancer adds (endpoint minus direct);
3. time to the first chunk of a streamed answer (server-sent events), median of
   ``--streams``.

Targets (reported, not gated): p50 added <= 1 ms, throughput >= 80% of direct. Load
generator, load balancer and replica share this machine's cores.

    python benchmarks/bench_serve.py [--requests 4000] [--concurrency 32]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._timing import bench_env, load_average, skyc_command  # noqa: E402

APP = ROOT / "tests" / "serve" / "app.py"


def _skyc(env: dict[str, str], cwd: Path, *args: str) -> str:
    proc = subprocess.run(skyc_command(*args), cwd=cwd, env=env, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=300)
    if proc.returncode != 0:
        sys.exit(f"skyc {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return proc.stdout


def _service(env: dict[str, str], cwd: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(
        _skyc(env, cwd, "serve", "status", "bench", "--format", "json"))["services"][0]
    return doc


def _up(env: dict[str, str], cwd: Path) -> tuple[str, str]:
    """The service's endpoint and its replica's URL, once ready."""
    (cwd / "svc.yaml").write_text(
        "service:\n  readiness_probe: /health\n  replicas: 1\nresources:\n  infra: local\n"
        f"run: exec {sys.executable} {APP}\n")
    _skyc(env, cwd, "serve", "up", "svc.yaml", "-n", "bench", "-y")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        doc = _service(env, cwd)
        ready = [r for r in doc["replicas"] if r["status"] == "READY"]
        if ready:
            return str(doc["endpoint"]), str(ready[0]["endpoint"])
        time.sleep(0.3)
    sys.exit("the service never became ready")


async def _throughput(url: str, total: int, concurrency: int) -> float:
    import aiohttp

    left = [total]

    async def worker(session: aiohttp.ClientSession) -> None:
        while left[0] > 0:
            left[0] -= 1
            async with session.get(url + "/") as answer:
                await answer.read()
                assert answer.status == 200, answer.status

    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        start = time.perf_counter()
        await asyncio.gather(*(worker(session) for _ in range(concurrency)))
        return total / (time.perf_counter() - start)


async def _latencies(url: str, count: int) -> list[float]:
    import aiohttp

    out = []
    async with aiohttp.ClientSession() as session:
        for _ in range(count):
            start = time.perf_counter()
            async with session.get(url + "/") as answer:
                await answer.read()
            out.append((time.perf_counter() - start) * 1000)
    return out


async def _first_chunk(url: str, count: int) -> float:
    import aiohttp

    firsts = []
    async with aiohttp.ClientSession() as session:
        for _ in range(count):
            start = time.perf_counter()
            async with session.get(url + "/stream?n=3&gap=0.2") as answer:
                await answer.content.readany()
                firsts.append((time.perf_counter() - start) * 1000)
                await answer.read()
    return statistics.median(firsts)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _measure(url: str, args: argparse.Namespace) -> dict[str, float]:
    asyncio.run(_throughput(url, 200, args.concurrency))   # warm the connections up
    lat = asyncio.run(_latencies(url, args.sequential))
    return {"rps": asyncio.run(_throughput(url, args.requests, args.concurrency)),
            "p50": statistics.median(lat), "p99": _pct(lat, 0.99),
            "first_chunk": asyncio.run(_first_chunk(url, args.streams))}


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--requests", type=int, default=4000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--sequential", type=int, default=1000)
    parser.add_argument("--streams", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        env = bench_env(SKYC_HOME=str(cwd / "home"), SKYC_SERVE_POLL_S="1")
        env.pop("SKYC_SERVE_QPS_WINDOW_S", None)
        try:
            endpoint, replica = _up(env, cwd)
            direct = _measure(replica, args)
            through = _measure(endpoint, args)
        finally:
            _skyc(env, cwd, "serve", "down", "--all", "-y")
    print(f"load average: {load_average()}; {os.cpu_count()} CPUs; aiohttp client, "
          f"{args.concurrency} connections, {args.requests} requests")
    print(f"{'':14}{'direct':>10}{'endpoint':>10}{'added':>10}")
    for key, label, unit in (("rps", "requests/s", ""), ("p50", "p50", " ms"),
                             ("p99", "p99", " ms"), ("first_chunk", "first chunk", " ms")):
        added = through[key] - direct[key]
        print(f"{label:14}{direct[key]:>10.2f}{through[key]:>10.2f}{added:>+10.2f}{unit}")
    ratio = through["rps"] / direct["rps"]
    print(f"throughput through the endpoint: {ratio:.0%} of direct (target >= 80%); "
          f"p50 added {through['p50'] - direct['p50']:.2f} ms (target <= 1 ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
