"""Time from starting ``skyc exec`` on a 2-node local cluster to its first log line.

A whole ``skyc`` process per run (start-up, task load, connect, sync of a small
workdir, job start, log streaming), median of N runs after one warm-up run (which
uploads the agent). Exits 1 above the budget (0.5 s).

    python benchmarks/bench_exec.py [--runs N] [--budget SECONDS]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _timing import ROOT, skyc_command

sys.path.insert(0, str(ROOT))

from skyc.model.nodes import ClusterInfo, Node

MARKER = "first-line"


def setup(root: Path) -> Path:
    home = root / "skyc_home"
    cluster = ClusterInfo(
        name="bench", cloud="local", workspace=str(home / "clusters" / "bench"),
        nodes=[Node(name=n, rank=i, transport="local", ip="127.0.0.1",
                    node_dir=str(root / f"node{i}")) for i, n in enumerate(["head", "worker1"])])
    path = home / "clusters" / "bench" / "cluster.json"
    path.parent.mkdir(parents=True)
    path.write_text(cluster.model_dump_json())
    workdir = root / "wd"
    workdir.mkdir()
    for i in range(20):
        (workdir / f"src{i}.py").write_text(f"print({i})\n")
    task = root / "task.yaml"
    task.write_text(f"workdir: {workdir}\nsetup: echo setup\nrun: echo {MARKER}\n")
    return task


def first_line_seconds(task: Path, home: Path) -> float:
    env = {**os.environ, "SKYC_HOME": str(home)}
    start = time.perf_counter()
    proc = subprocess.Popen(skyc_command("exec", "bench", str(task)), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    elapsed = None
    for line in proc.stdout:
        if MARKER in line and elapsed is None:
            elapsed = time.perf_counter() - start
    proc.wait()
    if elapsed is None or proc.returncode != 0:
        err = proc.stderr.read() if proc.stderr else ""
        sys.exit(f"skyc exec failed ({proc.returncode}): {err}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--budget", type=float, default=0.5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        task = setup(root)
        first_line_seconds(task, root / "skyc_home")  # warm-up: uploads the agent
        times = [first_line_seconds(task, root / "skyc_home") for _ in range(args.runs)]
    median = statistics.median(times)
    print(f"skyc exec to first log line: median {median:.3f} s over {args.runs} runs "
          f"(min {min(times):.3f}, max {max(times):.3f}; budget {args.budget} s)")
    return 0 if median <= args.budget else 1


if __name__ == "__main__":
    sys.exit(main())
