"""Workdir sync to 2 real sshd nodes (loopback) against ``rsync -a`` over ssh, same run.

Builds a workdir of 5,000 files / 50 MB (source and node homes on /dev/shm, so
that both tools are measured on transfer, not on this VM's throttled disk), then
for each trial syncs it to fresh targets on both nodes in parallel with skyc
(connect + scan + one tar stream per node) and with two parallel
``rsync -a -e ssh`` runs, and times a resync with nothing changed. Needs root
and /usr/sbin/sshd (it creates two Unix users).

    python benchmarks/bench_sync.py [--trials N] [--files 5000] [--mb 50]

Exits 1 when the median ratio skyc/rsync is above 1.2 or the no-change resync
median is above 0.3 s.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from skyc.runtime.session import ClusterSession
from skyc.runtime.sync import SyncCache, sync_tree
from tests.support.sshd import SshdCluster, sshd_unavailable


def make_workdir(root: Path, files: int, total_mb: int) -> None:
    size = total_mb * 1024 * 1024 // files
    block = os.urandom(size)
    for i in range(files):
        d = root / f"dir{i % 50:02d}" / f"sub{i % 7}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"file{i:05d}.bin").write_bytes(block[i % 97:] + block[: i % 97])


async def skyc_sync(cluster: SshdCluster, workdir: Path, target: str) -> tuple[float, float]:
    """Seconds for an initial sync and for a resync with nothing changed."""
    info = cluster.cluster_info("bench")
    start = time.perf_counter()
    async with ClusterSession(info) as session:
        await session.open(30)
        cache = SyncCache(session.workspace)
        await sync_tree(session.agents, workdir, target, cache)
        initial = time.perf_counter() - start
        start = time.perf_counter()
        sent = await sync_tree(session.agents, workdir, target, cache)
        resync = time.perf_counter() - start
        assert sent == [0, 0], sent
    return initial, resync


def rsync_both(cluster: SshdCluster, workdir: Path, target: str) -> float:
    key = cluster.workspace / "id_ed25519"
    known = cluster.workspace / "known_hosts"  # pinned by the skyc run before
    start = time.perf_counter()
    procs = [subprocess.Popen(
        ["rsync", "-a", "-e",
         f"ssh -i {key} -p {n.port} -o UserKnownHostsFile={known} -o StrictHostKeyChecking=yes "
         "-o BatchMode=yes", f"{workdir}/", f"{n.user}@{n.host}:{target}/"])
        for n in cluster.nodes]
    for p in procs:
        if p.wait() != 0:
            sys.exit("rsync failed")
    return time.perf_counter() - start


def clear_targets(cluster: SshdCluster) -> None:
    for n in cluster.nodes:
        for name in ("sky_workdir", "rsync_dest"):
            shutil.rmtree(n.home / name, ignore_errors=True)
        shutil.rmtree(n.home / ".skyc" / "sync", ignore_errors=True)
    shutil.rmtree(cluster.workspace / "sync", ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--mb", type=int, default=50)
    args = parser.parse_args()
    reason = sshd_unavailable()
    if reason:
        print(f"skipped: {reason}")
        return 0
    # Everything on tmpfs: this measures the transfer, not a throttled VM disk.
    with tempfile.TemporaryDirectory(dir="/dev/shm") as tmp:
        root = Path(tmp)
        root.chmod(0o755)  # the node users reach their homes through it
        workdir = root / "wd"
        make_workdir(workdir, args.files, args.mb)
        cluster = SshdCluster(root / "sshd", 2, home_root=root / "homes")
        (root / "homes").mkdir()
        (root / "homes").chmod(0o755)
        try:
            cluster.start()
            asyncio.run(skyc_sync(cluster, workdir, "~/warmup"))  # agent upload, page cache
            ratios, resyncs = [], []
            for trial in range(args.trials):
                clear_targets(cluster)
                if trial % 2:  # alternate which tool goes first
                    theirs = rsync_both(cluster, workdir, "rsync_dest")
                    ours, resync = asyncio.run(skyc_sync(cluster, workdir, "~/sky_workdir"))
                else:
                    ours, resync = asyncio.run(skyc_sync(cluster, workdir, "~/sky_workdir"))
                    theirs = rsync_both(cluster, workdir, "rsync_dest")
                ratios.append(ours / theirs)
                resyncs.append(resync)
                print(f"trial {trial + 1}: skyc {ours:.2f} s, rsync -a {theirs:.2f} s, "
                      f"ratio {ours / theirs:.2f}; no-change resync {resync * 1000:.0f} ms")
        finally:
            cluster.stop()
    ratio, resync = statistics.median(ratios), statistics.median(resyncs)
    print(f"median ratio skyc/rsync: {ratio:.2f} (budget 1.2); "
          f"median no-change resync: {resync * 1000:.0f} ms (budget 300 ms)")
    return 0 if ratio <= 1.2 and resync <= 0.3 else 1


if __name__ == "__main__":
    sys.exit(main())
