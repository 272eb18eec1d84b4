"""The state at a team's size, sqlite against PostgreSQL: ``StateDB`` opening the state,
listing CLUSTERS clusters (default 10,000), reading one cluster's jobs, one job by id
and by the cluster's id for it with JOBS job records (default 1,000,000, spread evenly
over the clusters), and whole ``skyc status --format json`` and ``skyc state check``
processes over that state (N runs each, medians; the processes one untimed run first).

The records are written in bulk (sqlite: one transaction of ``executemany``; PostgreSQL:
``COPY``), then each database is ANALYZEd. PostgreSQL 15 runs as in the tests
(:mod:`tests.support.postgres`: 127.0.0.1, a throwaway data directory, fsync off, which
changes writes, not these reads). Exits 1 when a StateDB median is over BUDGET seconds
(default 1.0).

    python benchmarks/bench_state_backends.py [--clusters N] [--jobs N] [--runs N]
        [--budget S] [--no-process]
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from _timing import ROOT, bench_env, load_average, skyc_command, time_runs

sys.path.insert(0, str(ROOT))

from skyc.state.database import StateDB
from skyc.state.records import dump_payload

_PLACEMENT = dump_payload({"instance_type": "p4d.24xlarge", "accelerators": {"A100": 8},
                           "num_nodes": 2, "use_spot": False})
_NODES = dump_payload([{"name": "head", "rank": 0, "ip": "10.0.0.1"},
                       {"name": "worker1", "rank": 1, "ip": "10.0.0.2"}])
_CODES = dump_payload({"head": 0, "worker1": 0})
_CLUSTER_COLUMNS = ("name", "status", "cloud", "region", "zone", "placement", "workspace",
                    "engine", "nodes", "launched_at", "hourly_cost", "last_job", "updated_at")
_JOB_COLUMNS = ("id", "cluster", "name", "status", "submitted_at", "started_at", "ended_at",
                "exit_codes", "log_path", "job_id")


def _clusters(count: int, jobs: int) -> Iterator[tuple[Any, ...]]:
    per = max(jobs // count, 1)
    for n in range(count):
        last = jobs if n == count - 1 else min((n + 1) * per, jobs)
        yield (f"c{n:05d}", "UP", "aws", "us-east-1", "us-east-1a", _PLACEMENT,
               f"/home/u/.skyc/clusters/c{n:05d}", "terraform", _NODES, 1.7e9 + n, 65.54,
               last or None, 1.7e9 + n)


def _jobs(count: int, jobs: int) -> Iterator[tuple[Any, ...]]:
    """``jobs // count`` jobs on each cluster (the rest on the last one), ids 1, 2, ..."""
    per = max(jobs // count, 1)
    for row in range(1, jobs + 1):
        cluster = min((row - 1) // per, count - 1)
        yield (row, f"c{cluster:05d}", f"job-{row}", "SUCCEEDED", 1.7e9 + row,
               1.7e9 + row + 1, 1.7e9 + row + 60, _CODES, f"/home/u/.skyc/logs/{row}",
               row - cluster * per)


def _fill_sqlite(path: Path, clusters: int, jobs: int) -> None:
    StateDB(path).close()
    import sqlite3

    conn = sqlite3.connect(path)
    with conn:
        conn.executemany(f"INSERT INTO clusters ({', '.join(_CLUSTER_COLUMNS)}) VALUES "
                         f"({', '.join('?' * len(_CLUSTER_COLUMNS))})", _clusters(clusters, jobs))
        conn.executemany(f"INSERT INTO jobs ({', '.join(_JOB_COLUMNS)}) VALUES "
                         f"({', '.join('?' * len(_JOB_COLUMNS))})", _jobs(clusters, jobs))
    conn.execute("ANALYZE")
    conn.close()


def _fill_postgres(url: str, clusters: int, jobs: int) -> None:
    from skyc.state.pg_store import PostgresStore

    store = PostgresStore(url)
    try:
        with store.transaction() as tx:
            tx.copy_rows("clusters", _CLUSTER_COLUMNS, _clusters(clusters, jobs))
            tx.copy_rows("jobs", _JOB_COLUMNS, _jobs(clusters, jobs))
            tx.advance_ids("jobs", jobs)
        with store.transaction() as tx:
            tx.execute("ANALYZE")
    finally:
        store.close()


def _median(work: Callable[[], object], runs: int) -> float:
    work()  # warm: the first read of a kind of record builds its validator
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _in_process(open_db: Callable[[], StateDB], clusters: int, jobs: int,
                runs: int) -> dict[str, float]:
    middle = f"c{clusters // 2:05d}"
    db = open_db()
    try:
        found = db.list_clusters()
        assert len(found) == clusters, len(found)
        listed = db.list_jobs(middle)
        assert jobs == 0 or listed, "no jobs on the middle cluster"
        one = listed[len(listed) // 2] if listed else None
        results = {
            "open StateDB": _median(lambda: open_db().close(), runs),
            f"list_clusters ({clusters:,})": _median(db.list_clusters, runs),
            f"list_jobs (1 cluster, {len(listed):,} jobs)":
                _median(lambda: db.list_jobs(middle), runs),
        }
        if one is not None and one.job_id is not None:
            cluster_job = one.job_id
            results["get_job by row id"] = _median(lambda: db.get_job(one.id), runs)
            results["find_job by the cluster's id"] = _median(
                lambda: db.find_job(middle, cluster_job), runs)
        return results
    finally:
        db.close()


def _processes(home: Path, url: str | None, runs: int) -> dict[str, float]:
    env = bench_env(SKYC_HOME=str(home), **({"SKYC_STATE_URL": url} if url else {}))
    return {f"skyc {' '.join(args)} (process)": time_runs(skyc_command(*args), env, runs).wall
            for args in (("status", "--format", "json"), ("state", "check"))}


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clusters", type=int, default=10_000)
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--budget", type=float, default=1.0)
    parser.add_argument("--no-process", action="store_true",
                        help="time only StateDB, not whole skyc processes")
    return parser.parse_args()


def _measure(kind: str, home: Path, url: str | None, args: argparse.Namespace
             ) -> dict[str, float]:
    start = time.perf_counter()
    if url is None:
        _fill_sqlite(home / "state.db", args.clusters, args.jobs)
    else:
        _fill_postgres(url, args.clusters, args.jobs)
    print(f"{kind}: wrote {args.clusters:,} clusters and {args.jobs:,} jobs in "
          f"{time.perf_counter() - start:.1f} s", flush=True)

    def opened() -> StateDB:
        return StateDB(url=url) if url else StateDB(home / "state.db")

    results = _in_process(opened, args.clusters, args.jobs, args.runs)
    if not args.no_process:
        results.update(_processes(home, url, max(1, args.runs // 2)))
    return results


def main() -> int:
    from tests.support.postgres import postgres_unavailable, running_server

    args = _args()
    # Stopped by a signal, it still stops its PostgreSQL server (the with blocks' exits).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    reason = postgres_unavailable()
    if reason is not None:
        print(f"skipped: {reason}")
        return 0
    print(f"state backends, {load_average()}")
    with tempfile.TemporaryDirectory() as tmp, running_server() as server:
        table = {"sqlite": _measure("sqlite", Path(tmp) / "sqlite", None, args),
                 "postgresql": _measure("postgresql", Path(tmp) / "pg",
                                        server.create_database("bench"), args)}
    print(f"\n{'median seconds':<48} {'sqlite':>10} {'postgresql':>10}")
    for name in table["sqlite"]:
        print(f"{name:<48} {table['sqlite'][name]:>10.4f} {table['postgresql'][name]:>10.4f}")
    over = [f"{kind}: {name} {value:.3f} s" for kind, rows in table.items()
            for name, value in rows.items()
            if "(process)" not in name and value > args.budget]
    print(json.dumps({"budget_s": args.budget, "over": over}))
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
