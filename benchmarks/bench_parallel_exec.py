"""Parallel ``skyc exec`` on one local cluster: every job recorded, every exit code right.

After one exec alone (job 1, which uploads the agent), starts N (default 60)
``skyc exec`` processes at once on a 2-node local cluster, job i exiting with
``i % 7``, then checks: each exec exited with its job's code; the state database
holds N + 1 job records with ids 1..N+1 and the right exit code on both nodes;
the local job table lists ids 1..N+1; the nodes report every job
finished (SUCCEEDED for code 0, FAILED otherwise). Prints the wall time of the
whole burst and of one exec alone; exits 1 on any wrong record or code, or when
the burst takes more than ``--budget`` seconds (120).

    python benchmarks/bench_parallel_exec.py [--execs N] [--budget SECONDS]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from _timing import ROOT, bench_env, load_average, skyc_command

sys.path.insert(0, str(ROOT))

from skyc.model.nodes import ClusterInfo, Node
from skyc.runtime import queue
from skyc.state.database import ClusterRecord, StateDB

CODES = 7


def setup(root: Path) -> tuple[Path, Path]:
    """A 2-node local cluster named ``par`` (its nodes file and its state record)."""
    home = root / "skyc_home"
    cluster = ClusterInfo(
        name="par", cloud="local", workspace=str(home / "clusters" / "par"),
        nodes=[Node(name=n, rank=i, transport="local", ip="127.0.0.1",
                    node_dir=str(root / f"node{i}")) for i, n in enumerate(["head", "worker1"])])
    path = home / "clusters" / "par" / "cluster.json"
    path.parent.mkdir(parents=True)
    path.write_text(cluster.model_dump_json())
    with StateDB(home / "state.db") as db:
        db.upsert_cluster(ClusterRecord(
            name="par", status="UP", cloud="local", placement={"num_nodes": 2},
            nodes=[n.model_dump(mode="json") for n in cluster.nodes]))
    task = root / "task.yaml"
    task.write_text("name: par\nnum_nodes: 2\nrun: echo rank $SKYPILOT_NODE_RANK; exit $CODE\n")
    return home, task


def run_exec(home: Path, task: Path, code: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        skyc_command("exec", "par", str(task), "--env", f"CODE={code}"), cwd=ROOT,
        env=bench_env(SKYC_HOME=str(home), NO_COLOR="1"), stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=600)


def check(home: Path, want: dict[int, int], got: list[tuple[int, int, str]]) -> list[str]:
    """What is wrong with the burst's results and records (empty: nothing)."""
    problems = [f"exec {i}: exited {rc}, its job exits {want[i]}: {err[-300:]!r}"
                for i, rc, err in got if rc != want[i]]
    n = len(want)
    with StateDB(home / "state.db") as db:
        records = db.list_jobs("par")
    ids = sorted(r.job_id or 0 for r in records)
    if ids != list(range(1, n + 1)):
        problems.append(f"state database: job ids {ids}, expected 1..{n}")
    split = [r.job_id for r in records if set(r.exit_codes) != {"head", "worker1"}
             or len(set(r.exit_codes.values())) != 1]
    if split:
        problems.append(f"state database: jobs {split} lack a node's code, or differ")
    codes = sorted(r.exit_codes.get("head", -1) for r in records)
    if codes != sorted(want.values()):
        problems.append(f"state database: exit codes {codes}, expected {sorted(want.values())}")
    wrong = [r.job_id for r in records
             if r.status != ("SUCCEEDED" if r.exit_codes.get("head") == 0 else "FAILED")]
    if wrong:
        problems.append(f"state database: jobs {wrong} have the wrong status")
    table = json.loads((home / "logs" / "par" / "jobs.json").read_text())
    if sorted(j["job_id"] for j in table) != list(range(1, n + 1)):
        problems.append(f"job table: ids {[j['job_id'] for j in table]}, expected 1..{n}")
    os.environ["SKYC_HOME"] = str(home)
    info = ClusterInfo.model_validate_json((home / "clusters" / "par" / "cluster.json")
                                           .read_text())
    seen = {int(j["job_id"]): j["status"] for j in queue(info)}  # as the nodes see them
    code_of = {r.job_id: r.exit_codes.get("head") for r in records}
    wrong_there = {jid: st for jid, st in seen.items()
                   if st != ("SUCCEEDED" if code_of.get(jid) == 0 else "FAILED")}
    if sorted(seen) != list(range(1, n + 1)) or wrong_there:
        problems.append(f"queue: ids {sorted(seen)}, wrong statuses {wrong_there}")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--execs", type=int, default=60)
    parser.add_argument("--budget", type=float, default=120.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home, task = setup(Path(tmp))
        start = time.perf_counter()
        alone = run_exec(home, task, 0)  # uploads the agent; job 1
        one = time.perf_counter() - start
        if alone.returncode != 0:
            print(f"FAIL: a single exec exited {alone.returncode}: {alone.stderr[-2000:]}")
            return 1
        want = {i: i % CODES for i in range(1, args.execs + 1)}
        start = time.perf_counter()
        with ThreadPoolExecutor(len(want)) as pool:
            results = list(pool.map(lambda i: (i, run_exec(home, task, want[i])), want))
        burst = time.perf_counter() - start
        got = [(i, r.returncode, r.stderr) for i, r in results]
        problems = check(home, {0: 0, **want}, [(0, alone.returncode, ""), *got])
    print(f"{load_average()}")
    print(f"one exec alone: {one:.2f} s wall")
    print(f"{len(want)} execs at once on one 2-node local cluster: {burst:.2f} s wall "
          f"({len(want) + 1} jobs in all, with the first exec's)")
    for problem in problems:
        print(f"FAIL: {problem}")
    if burst > args.budget:
        print(f"FAIL: the burst took {burst:.1f} s, over the budget of {args.budget:.0f} s")
        return 1
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
