"""Buckets against a real moto S3 server on loopback, each figure a median of runs.

1. Reading a SIZE MiB object (``--size-mib``, 1024) through a MOUNT and a MOUNT_CACHED
   mount made by skyc's node agent (a job on a one-node local cluster mounts the
   bucket, reads the object and prints the seconds the read took; each run mounts
   afresh, so every read is cold) against ``rclone copy`` of the object into a local
   directory. Target: each mount read at most 1.3x the copy.
2. skyc's upload of a local source of N files (``--files``, 5000; 50 MiB in all) into
   a new bucket (``upload_sources``) against ``rclone sync`` of the same tree into
   another. Target: at most 1.2x.
3. skyc's upload of that source again with one file changed. Target: at most 1 s.

Ratios are medians of the run-by-run ratios; the tools run in alternating order.
Needs rclone, fusermount3, /dev/fuse open to this user (root) and moto.

    PYTHONPATH=. python benchmarks/bench_storage.py [--size-mib 1024] [--files 5000]
        [--repeat 3]

Exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from _timing import ROOT

sys.path.insert(0, str(ROOT))

from pydantic import SecretStr

from skyc.model.nodes import ClusterInfo, Node
from skyc.runtime import JobSpec, run_job, stop_all_jobs
from skyc.runtime.spec import BucketMount
from skyc.settings.config import SkycConfig
from skyc.storage.access import rclone_env
from skyc.storage.rclone import tool_env
from skyc.storage.uses import BucketUse
from tests.support.moto_server import CREDENTIALS, MotoServer, start_moto
from tests.support.sshd import unmount_under

BIG = "big.bin"
TREE_BYTES = 50 * 1024 * 1024
# The job's run: the object read through the mount in 1 MiB reads, timed on the node.
READ = ("python3 -c \"import os, time; f = open(os.path.expanduser('~/mnt/" + BIG + "'), "
        "'rb', buffering=0); b = bytearray(1 << 20); t = time.perf_counter(); "
        "n = sum(iter(lambda: f.readinto(b), 0)); "
        "print('read-seconds', time.perf_counter() - t, n)\"")


@dataclass
class Figure:
    """One thing measured: its seconds, run by run, and its target when it has one:
    a ratio to ``base``'s seconds of the same runs, else seconds."""

    label: str
    seconds: list[float] = field(default_factory=list)
    base: Figure | None = None
    limit: float | None = None

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def judged(self) -> float:
        if self.base is None:
            return self.median
        return statistics.median(s / b for s, b in zip(self.seconds, self.base.seconds,
                                                        strict=True))

    @property
    def met(self) -> bool:
        return self.limit is None or self.judged <= self.limit

    def row(self) -> str:
        runs = " ".join(f"{s:.2f}" for s in self.seconds)
        if self.limit is None:
            target = ""
        else:
            kind = f"ratio {self.judged:.2f} <= {self.limit:.1f}" if self.base else (
                f"<= {self.limit:.1f} s")
            target = f"{kind}: {'met' if self.met else 'MISSED'}"
        return f"{self.label:<44} {self.median:>8.2f} s   {target:<26} ({runs})"


def missing_tools() -> str | None:
    for tool in ("rclone", "fusermount3"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (Debian packages rclone, fuse3)"
    if not os.access("/dev/fuse", os.R_OK | os.W_OK):
        return "/dev/fuse is not open to this user (run as root)"
    try:
        import moto  # noqa: F401
    except ImportError:
        return "moto is not installed"
    return None


def local_cluster(root: Path) -> ClusterInfo:
    return ClusterInfo(name="bench", cloud="local", workspace=str(root / "workspace"),
                       nodes=[Node(name="head", rank=0, transport="local", ip="127.0.0.1",
                                   node_dir=str(root / "node0"))])


def bucket_use(bucket: str, uploads: tuple[str, ...] = ()) -> BucketUse:
    return BucketUse(target="/data", store="s3", bucket=bucket, mode="COPY", created=True,
                     uploads=uploads)


def rclone_settings(server: MotoServer, home: Path) -> dict[str, str]:
    """The RCLONE_CONFIG_* settings skyc gives rclone for this server."""
    use = bucket_use("bench-any")
    config = SkycConfig.model_validate({"aws": {"endpoint_url": server.url}})
    keys = {k: CREDENTIALS[k] for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
    return rclone_env([use], config, env=keys, home=home)


def rclone(args: list[str], settings: dict[str, str]) -> float:
    """Seconds ``rclone ARGS`` took, with skyc's environment for it."""
    env, flags = tool_env(settings)
    start = time.perf_counter()
    done = subprocess.run(["rclone", *args, *flags], env=env, capture_output=True, text=True,
                          check=False)
    took = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"rclone {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return took


def copy_object(source: str, into: Path, settings: dict[str, str]) -> float:
    """Seconds ``rclone copy`` of one object into an empty directory took."""
    shutil.rmtree(into, ignore_errors=True)
    into.mkdir()
    try:
        return rclone(["copy", source, str(into)], settings)
    finally:
        shutil.rmtree(into)


def mount_read(cluster: ClusterInfo, remote: str, mode: str,
               settings: dict[str, str], size: int) -> float:
    """Seconds a job's read of the object through a fresh ``mode`` mount took."""
    spec = JobSpec(run=READ, buckets=[BucketMount(target="~/mnt", remote=remote, mode=mode)],
                   bucket_env={k: SecretStr(v) for k, v in settings.items()})
    lines: list[str] = []
    try:
        result = run_job(cluster, spec, on_line=lambda _label, line: lines.append(line))
    finally:
        stop_all_jobs(cluster)  # the mount and its cache go: the next read is cold
    said = [line.split() for line in lines if line.startswith("read-seconds")]
    if result.status != "SUCCEEDED" or not said or int(said[0][2]) != size:
        sys.exit(f"the {mode} read failed ({result.status}):\n" + "\n".join(lines[-20:]))
    return float(said[0][1])


def bench_mounts(server: MotoServer, root: Path, settings: dict[str, str],
                 size_mib: int, repeat: int) -> list[Figure]:
    bucket, remote = "bench-read", bucket_use("bench-read").remote
    root.mkdir()
    server.client("s3").create_bucket(Bucket=bucket)
    size = size_mib << 20
    started = time.perf_counter()
    server.client("s3").put_object(Bucket=bucket, Key=BIG, Body=os.urandom(1 << 20) * size_mib)
    print(f"uploaded {size_mib} MiB in one PUT in {time.perf_counter() - started:.1f} s")
    copy = Figure(f"rclone copy of {size_mib} MiB")
    reads = {mode: Figure(f"read through {mode}", base=copy, limit=1.3)
             for mode in ("MOUNT", "MOUNT_CACHED")}
    cluster = local_cluster(root)
    try:
        for run in range(repeat):
            steps: list[tuple[Figure, Callable[[], float]]] = [
                (copy, lambda: copy_object(f"{remote}/{BIG}", root / "copied", settings))]
            steps += [(figure, partial(mount_read, cluster, remote, mode, settings, size))
                      for mode, figure in reads.items()]
            for figure, measure in steps[::-1] if run % 2 else steps:
                figure.seconds.append(measure())
            print(f"run {run + 1}: " + ", ".join(
                f"{f.label} {f.seconds[-1]:.2f} s" for f, _ in steps), flush=True)
    finally:
        stop_all_jobs(cluster)
        unmount_under(root)
    return [copy, *reads.values()]


def make_tree(root: Path, files: int) -> None:
    block = os.urandom(max(TREE_BYTES // files, 1))
    for i in range(files):
        d = root / f"dir{i % 50:02d}" / f"sub{i % 7}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"file{i:05d}.bin").write_bytes(block[i % 97:] + block[:i % 97])


def skyc_upload(tree: Path, bucket: str, settings: dict[str, str], workspace: Path) -> float:
    """skyc's upload, keeping its record of what was sent in ``workspace`` (as apply
    keeps it beside the bucket's stack)."""
    from skyc.apply.bucket_uploads import upload_sources

    use = bucket_use(bucket, (str(tree),))
    start = time.perf_counter()
    upload_sources(use, settings, lambda _stage, _detail: None, workspace)
    return time.perf_counter() - start


def change_one(server: MotoServer, tree: Path, bucket: str, run: int,
               settings: dict[str, str], workspace: Path) -> float:
    """Changes one file of ``tree`` and uploads the tree again; the seconds, once the
    bucket holds the new content."""
    files = sorted(tree.rglob("*.bin"))
    changed = files[run * 7919 % len(files)]
    body = os.urandom(changed.stat().st_size)
    changed.write_bytes(body)
    took = skyc_upload(tree, bucket, settings, workspace)
    key = changed.relative_to(tree).as_posix()
    if server.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read() != body:
        sys.exit(f"the second upload left the old {key} in the bucket")
    return took


def bench_uploads(server: MotoServer, root: Path, settings: dict[str, str],
                  files: int, repeat: int) -> list[Figure]:
    tree = root / "source"
    theirs = bucket_use("bench-rclone").remote
    make_tree(tree, files)
    sync = Figure(f"rclone sync of {files} files")
    upload = Figure(f"skyc upload of {files} files", base=sync, limit=1.2)
    again = Figure("skyc upload again, one file changed", limit=1.0)
    resync = Figure("rclone sync again (for reference)")
    for run in range(repeat):
        server.reset()  # each run starts from an empty server
        for bucket in ("bench-skyc", "bench-rclone"):
            server.client("s3").create_bucket(Bucket=bucket)
        workspace = root / f"workspace-{run}"  # a new bucket: no record of an upload
        steps: list[tuple[Figure, Callable[[], float]]] = [
            (upload, partial(skyc_upload, tree, "bench-skyc", settings, workspace)),
            (sync, lambda: rclone(["sync", str(tree), theirs], settings))]
        for figure, measure in steps[::-1] if run % 2 else steps:
            figure.seconds.append(measure())
        again.seconds.append(change_one(server, tree, "bench-skyc", run, settings,
                                         workspace))
        resync.seconds.append(rclone(["sync", str(tree), theirs], settings))
        print(f"run {run + 1}: " + ", ".join(
            f"{f.label} {f.seconds[-1]:.2f} s" for f in (upload, sync, again, resync)),
            flush=True)
    return [sync, upload, again, resync]


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    reason = missing_tools()
    if reason:
        print(f"skipped: {reason}")
        return 0
    with tempfile.TemporaryDirectory(prefix="skyc-bench-storage-") as tmp:
        root = Path(tmp)
        os.environ["SKYC_HOME"] = str(root / "skyc_home")
        with start_moto(root / "moto.log", skyc_amis=False, front=False) as server:
            settings = rclone_settings(server, root)
            figures = bench_mounts(server, root / "reads", settings, args.size_mib,
                                   args.repeat)
            figures += bench_uploads(server, root / "uploads", settings, args.files,
                                     args.repeat)
    print(f"\nmedians of {args.repeat} run(s), rclone {rclone_version()}, "
          f"{os.cpu_count()} CPUs:")
    for figure in figures:
        print(figure.row())
    return 0 if all(f.met for f in figures) else 1


def rclone_version() -> str:
    out = subprocess.run(["rclone", "version"], capture_output=True, text=True, check=False)
    return (out.stdout.split() or ["?", "?"])[1]


if __name__ == "__main__":
    sys.exit(main())
