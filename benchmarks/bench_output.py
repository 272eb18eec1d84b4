"""Job output at speed: ``skyc exec`` of a job printing SIZE MB (default 200) on a local
cluster, against ``cat`` of the same bytes through the same transport.

Both are whole processes with stdout to /dev/null, timed by wall and CPU (medians of
N runs after a warm-up). The job's output goes through everything a user's does: the
agent's follow, the node prefix, the stored log, the terminal writer. Also reports the
disk the stored logs take beyond the node's own log (none for a local node: the stored
log is a hard link to it). Exits 1 when exec takes more than RATIO (default 2) times
the wall of the ``cat`` baseline.

    python benchmarks/bench_output.py [--runs N] [--size-mb MB] [--ratio R]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from _timing import ROOT, bench_env, load_average, skyc_command, time_runs

sys.path.insert(0, str(ROOT))

from skyc.model.nodes import ClusterInfo, Node

_CAT = """
import asyncio, sys
from skyc.model.nodes import Node
from skyc.runtime.transport import LocalTransport
node = Node(name="head", rank=0, transport="local", ip="127.0.0.1", node_dir=sys.argv[1])
out = sys.stdout.buffer

async def main():
    transport = LocalTransport(node)
    await transport.connect(10)
    return await transport.run("cat " + sys.argv[2], on_stdout=out.write)

sys.exit(asyncio.run(main()).exit_code)
"""


def setup(root: Path, size_mb: int) -> tuple[Path, Path, Path]:
    home = root / "skyc_home"
    node_dir = root / "node0"
    cluster = ClusterInfo(
        name="out", cloud="local", workspace=str(home / "clusters" / "out"),
        nodes=[Node(name="head", rank=0, transport="local", ip="127.0.0.1",
                    node_dir=str(node_dir))])
    path = home / "clusters" / "out" / "cluster.json"
    path.parent.mkdir(parents=True)
    path.write_text(cluster.model_dump_json())
    data = root / "output.txt"
    line = b"step 000123 loss 0.123456 lr 0.000300 tokens/s 123456.7 " + b"x" * 22 + b"\n"
    with data.open("wb") as fh:
        block = line * (1 << 14)
        for _ in range(size_mb * (1 << 20) // len(block)):
            fh.write(block)
    task = root / "task.yaml"
    task.write_text(f"run: cat {data}\n")
    return home, task, data


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--size-mb", type=int, default=200)
    parser.add_argument("--ratio", type=float, default=2.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        home, task, data = setup(root, args.size_mb)
        env = bench_env(SKYC_HOME=str(home))
        cat = time_runs([sys.executable, "-c", _CAT, str(root / "node0"), str(data)], env,
                        args.runs)
        exec_ = time_runs(skyc_command("exec", "out", str(task)), env, args.runs)
        logs = sorted((home / "logs" / "out").glob("*/head.log"))
        node_files = {p.stat().st_ino for p in (root / "node0").rglob("*.log")}
        extra = sum(p.stat().st_size for p in (home / "logs" / "out").rglob("*.log")
                    if p.stat().st_ino not in node_files)
    size = args.size_mb
    print(f"load average: {load_average()}")
    print(f"cat through LocalTransport, {size} MB: {cat.summary()}")
    print(f"skyc exec printing {size} MB: {exec_.summary()}")
    print(f"ratio (wall medians): {exec_.wall / cat.wall:.2f}x; CPU ratio "
          f"{exec_.cpu / cat.cpu:.2f}x; stored logs beyond the node's own: "
          f"{extra / len(logs) / (1 << 20):.0f} MiB per job for {size} MB of output")
    if exec_.wall > args.ratio * cat.wall:
        print(f"FAIL: exec is over {args.ratio:g}x the cat baseline")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
