"""What a cluster lock costs: one round trip (take, then release, through
``skyc.state.locks.cluster_lock``) exclusive and shared, and one ``lock_held`` and
``read_holder`` question, with the sqlite state (``fcntl.flock`` on a file) against a
PostgreSQL state (an advisory lock on a connection of its own, its holder's row beside
it). A process's first PostgreSQL lock opens that connection (TCP, password
authentication); the next ones reuse it ("round trip"). RUNS round trips each (default
200), after WARMUP untimed ones; medians and 90th percentiles in milliseconds.

PostgreSQL 15 runs as in the tests (:mod:`tests.support.postgres`: 127.0.0.1 over TCP
with password authentication, a throwaway data directory); without its binaries the
PostgreSQL column is skipped with the reason.

    python benchmarks/bench_lock_roundtrip.py [--runs N] [--warmup N]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _timing import ROOT, load_average

sys.path.insert(0, str(ROOT))

from skyc.state.locks import cluster_lock, lock_held, lock_path, read_holder


def _exclusive() -> None:
    with cluster_lock("bench", timeout=5):
        pass


def _shared() -> None:
    with cluster_lock("bench", timeout=5, shared=True):
        pass


def _held() -> None:
    lock_held("bench")


def _holder() -> None:
    read_holder(lock_path("bench"))


def _nothing() -> None:
    pass


def _no_idle_connection() -> None:
    """As in a new process: no connection kept from an earlier lock (PostgreSQL)."""
    from skyc.state import pg_locks

    for conn in pg_locks._idle.values():
        conn.close()
    pg_locks._idle.clear()


# name: (untimed set-up before each run, the timed run)
CASES: dict[str, tuple[Callable[[], None], Callable[[], None]]] = {
    "exclusive, first in a process": (_no_idle_connection, _exclusive),
    "exclusive round trip": (_nothing, _exclusive),
    "shared round trip": (_nothing, _shared),
    "lock_held": (_nothing, _held),
    "read_holder": (_nothing, _holder),
}


def _measure(home: Path, url: str | None, runs: int, warmup: int) -> dict[str, list[float]]:
    os.environ["SKYC_HOME"] = str(home)
    os.environ.pop("SKYC_STATE_URL", None)
    if url is not None:
        os.environ["SKYC_STATE_URL"] = url
    home.mkdir(parents=True, exist_ok=True)
    results: dict[str, list[float]] = {}
    for name, (setup, case) in CASES.items():
        for _ in range(warmup):
            setup()
            case()
        times = []
        for _ in range(runs):
            setup()
            start = time.perf_counter()
            case()
            times.append((time.perf_counter() - start) * 1000)
        results[name] = times
    return results


def _p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1] if len(values) > 1 else values[0]


def _print(table: dict[str, dict[str, list[float]]]) -> None:
    kinds = list(table)
    header = "".join(f"{kind + ' median':>20}{'p90':>9}" for kind in kinds)
    print(f"\n{'milliseconds':<28}{header}")
    for name in CASES:
        cells = "".join(f"{statistics.median(table[k][name]):>20.3f}{_p90(table[k][name]):>9.3f}"
                        for k in kinds)
        print(f"{name:<28}{cells}")


def main() -> int:
    from tests.support.postgres import postgres_unavailable, running_server

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=10)
    args = parser.parse_args()
    # Stopped by a signal, it still stops its PostgreSQL server (the with blocks' exits).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    print(f"cluster lock round trips, {args.runs} runs each, {load_average()}")
    with tempfile.TemporaryDirectory() as tmp:
        table = {"sqlite": _measure(Path(tmp) / "sqlite", None, args.runs, args.warmup)}
        reason = postgres_unavailable()
        if reason is not None:
            print(f"postgresql skipped: {reason}")
        else:
            with running_server() as server:
                url = server.create_database("bench")
                table["postgresql"] = _measure(Path(tmp) / "pg", url, args.runs, args.warmup)
    _print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
