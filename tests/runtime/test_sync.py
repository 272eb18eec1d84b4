"""Workdir sync: ignore rules, incremental transfer, deletions, modes, symlinks, unicode names,
and a sync cut off half-way. The agent runs for real on local nodes (subprocesses)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from skyc.errors import RuntimeAgentError
from skyc.model.nodes import ClusterInfo
from skyc.runtime import JobSpec, run_job
from skyc.runtime.agent import EXIT_TRAILER
from skyc.runtime.remote import agent_module_name, agent_source
from skyc.runtime.session import ClusterSession
from skyc.runtime.sync import SyncCache, scan, sync_to_node, write_tar


def write(root: Path, rel: str, text: str = "x") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_gitignore_negation_and_nested_files(tmp_path: Path) -> None:
    write(tmp_path, ".gitignore", "*.log\n!keep.log\nbuild/\n/top_only.txt\n")
    write(tmp_path, "a.log")
    write(tmp_path, "keep.log")
    write(tmp_path, "build/out.bin")
    write(tmp_path, "top_only.txt")
    write(tmp_path, "sub/top_only.txt")
    write(tmp_path, "sub/.gitignore", "!debug.log\n*.tmp\n")
    write(tmp_path, "sub/debug.log")
    write(tmp_path, "sub/other.log")
    write(tmp_path, "sub/x.tmp")
    write(tmp_path, "sub/deeper/y.tmp")
    write(tmp_path, "src/build/inner.txt")  # 'build/' matches at any depth
    files = set(scan(tmp_path))
    assert files == {".gitignore", "keep.log", "sub", "sub/.gitignore", "sub/top_only.txt",
                     "sub/debug.log", "sub/deeper", "src"}


def test_skyignore_takes_precedence_over_gitignore(tmp_path: Path) -> None:
    write(tmp_path, ".gitignore", "data/\n")
    write(tmp_path, "sub/.gitignore", "*.txt\n")
    write(tmp_path, ".skyignore", "*.ckpt\n!best.ckpt\n")
    write(tmp_path, "data/d.csv")
    write(tmp_path, "sub/notes.txt")
    write(tmp_path, "m.ckpt")
    write(tmp_path, "best.ckpt")
    assert set(scan(tmp_path)) == {".gitignore", ".skyignore", "sub", "sub/.gitignore",
                                   "sub/notes.txt", "data", "data/d.csv", "best.ckpt"}


def _sync(cluster: ClusterInfo, workdir: Path) -> None:
    assert run_job(cluster, JobSpec(workdir=str(workdir), run="true")).ok


def test_incremental_sync_deletions_modes_symlinks_unicode(local_cluster: ClusterInfo,
                                                           tmp_path: Path) -> None:
    wd = tmp_path / "wd"
    write(wd, "keep.txt", "keep")
    write(wd, "gone.txt", "bye")
    write(wd, "olddir/inner.txt", "i")
    script = write(wd, "bin/run.sh", "#!/bin/sh\necho ok\n")
    script.chmod(0o750)
    write(wd, "données/日本語.txt", "unicode")
    (wd / "link_to_keep").symlink_to("keep.txt")
    (wd / "dangling").symlink_to("no/such/file")
    _sync(local_cluster, wd)
    remote = Path(local_cluster.nodes[1].node_dir or "") / "sky_workdir"
    assert (remote / "keep.txt").read_text() == "keep"
    assert (remote / "bin/run.sh").stat().st_mode & 0o777 == 0o750
    assert os.readlink(remote / "link_to_keep") == "keep.txt"
    assert os.readlink(remote / "dangling") == "no/such/file"
    assert (remote / "données/日本語.txt").read_text() == "unicode"
    keep_inode = (remote / "keep.txt").stat().st_ino
    (remote / "job_output.txt").write_text("written by the job")

    (wd / "gone.txt").unlink()
    (wd / "olddir/inner.txt").unlink()
    (wd / "olddir").rmdir()
    write(wd, "new.txt", "new")
    script.chmod(0o700)
    _sync(local_cluster, wd)
    assert not (remote / "gone.txt").exists()
    assert not (remote / "olddir").exists()
    assert (remote / "new.txt").read_text() == "new"
    assert (remote / "bin/run.sh").stat().st_mode & 0o777 == 0o700
    assert (remote / "keep.txt").stat().st_ino == keep_inode  # unchanged: not sent again
    assert (remote / "job_output.txt").exists()  # never synced, so never deleted


def test_empty_workdir(local_cluster: ClusterInfo, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    _sync(local_cluster, tmp_path / "empty")
    _sync(local_cluster, tmp_path / "empty")
    remote = Path(local_cluster.nodes[1].node_dir or "") / "sky_workdir"
    assert remote.is_dir() and not list(remote.iterdir())


def test_nothing_changed_sends_nothing(local_cluster: ClusterInfo, tmp_path: Path) -> None:
    wd = tmp_path / "wd"
    for i in range(20):
        write(wd, f"f{i}.txt", str(i))

    async def go() -> list[int]:
        async with ClusterSession(local_cluster) as session:
            await session.open(30)
            files = scan(wd)
            cache = SyncCache(session.workspace)
            first = await sync_to_node(session.agents[0], wd, files, "~/sky_workdir", cache)
            again = await sync_to_node(session.agents[0], wd, files, "~/sky_workdir", cache)
            # a cache lost locally: the node's manifest says nothing needs sending
            for p in (session.workspace / "sync").iterdir():
                p.unlink()
            fresh = await sync_to_node(session.agents[0], wd, files, "~/sky_workdir", cache)
            return [first, again, fresh]

    assert asyncio.run(go()) == [20, 0, 0]


def _agent_cmd(node_dir: Path, *args: str, stdin: bytes,
               path: str | None = None) -> subprocess.CompletedProcess[bytes]:
    _data, version = agent_source()
    agent = node_dir / ".skyc" / f"{agent_module_name(version)}.py"
    env = {**os.environ, "HOME": str(node_dir)}
    if path is not None:
        env["PATH"] = path
    return subprocess.run([sys.executable, str(agent), *args], input=stdin, capture_output=True,
                          env=env, check=False, timeout=60)


@pytest.mark.parametrize("extractor", ["tar", "tarfile"])
def test_sync_cut_off_half_way_keeps_previous_tree(local_cluster: ClusterInfo, tmp_path: Path,
                                                   extractor: str) -> None:
    wd = tmp_path / "wd"
    write(wd, "a.txt", "version 1")
    _sync(local_cluster, wd)
    node_dir = Path(local_cluster.nodes[0].node_dir or "")
    remote = node_dir / "sky_workdir"
    before = {p.relative_to(remote): p.read_bytes() for p in remote.rglob("*") if p.is_file()}

    write(wd, "a.txt", "version 2")
    write(wd, "big.bin", "z" * 2_000_000)
    write(wd, "last.txt", "the last member")
    files = scan(wd)
    manifest = _agent_cmd(node_dir, "sync-manifest", "~/sky_workdir", stdin=b"")
    base = json.loads(manifest.stdout)["id"]
    changed = ["a.txt", "big.bin", "last.txt"]
    meta = json.dumps({"base": base, "id": "new", "noop": False, "files": files,
                       "changed": changed}).encode()
    chunks: list[bytes] = []
    write_tar(chunks.append, wd, files, changed)
    tar = b"".join(chunks)
    last_member_at = tar.index(b"last.txt")  # header of the last member
    # with no tar on PATH the agent unpacks with Python's tarfile
    path = os.environ["PATH"] if extractor == "tar" else ""
    for cut in (len(tar) // 2, last_member_at):  # mid-file, and at a member boundary
        stream = str(len(meta)).encode() + b"\n" + meta + tar[:cut]
        out = _agent_cmd(node_dir, "sync-apply", "~/sky_workdir", stdin=stream, path=path)
        assert out.stderr.decode().strip().splitlines()[-1] == f"{EXIT_TRAILER} 1"
        assert "previous tree kept" in out.stderr.decode()
        after = {p.relative_to(remote): p.read_bytes() for p in remote.rglob("*") if p.is_file()}
        assert after == before
        assert not [p for p in node_dir.iterdir() if p.name.startswith(".skyc-staging")]
    # the whole stream applies
    stream = str(len(meta)).encode() + b"\n" + meta + tar
    out = _agent_cmd(node_dir, "sync-apply", "~/sky_workdir", stdin=stream, path=path)
    assert out.stderr.decode().strip().splitlines()[-1] == f"{EXIT_TRAILER} 0", out.stderr
    assert (remote / "a.txt").read_text() == "version 2"
    assert (remote / "big.bin").stat().st_size == 2_000_000


def test_file_vanishing_during_sync_fails_cleanly(local_cluster: ClusterInfo,
                                                  tmp_path: Path) -> None:
    wd = tmp_path / "wd"
    write(wd, "a.txt", "one")
    _sync(local_cluster, wd)
    write(wd, "a.txt", "two")
    write(wd, "b.txt", "soon gone")

    async def go() -> None:
        async with ClusterSession(local_cluster) as session:
            await session.open(30)
            files = scan(wd)
            (wd / "b.txt").unlink()
            await sync_to_node(session.agents[0], wd, files, "~/sky_workdir",
                               SyncCache(session.workspace))

    with pytest.raises(RuntimeAgentError, match=r"b\.txt"):
        asyncio.run(go())
    remote = Path(local_cluster.nodes[0].node_dir or "") / "sky_workdir"
    assert (remote / "a.txt").read_text() == "one"


def test_a_target_another_node_made_first_is_merged_into(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A local cluster's nodes (or nodes sharing a mount) sync the same absolute target
    at once: the node whose staging tree loses the race for the rename moves its files
    into the tree the other node put there, instead of failing with ENOTEMPTY."""
    import shutil

    from skyc.runtime import agent

    src = tmp_path / "src"
    write(src, "d/x.txt", "x")
    write(src, "top.txt", "top")
    files = scan(src)
    target = str(tmp_path / "shared" / "target")
    staging = {name: tmp_path / "shared" / f".skyc-staging-{name}" for name in ("a", "b")}
    for tree in staging.values():
        shutil.copytree(src, tree)
    renamed: list[str] = []
    real_rename = os.rename

    def other_node_first(source: str, dest: str) -> None:
        if dest == target and not renamed:  # node a wins between b's check and rename
            renamed.append(str(staging["a"]))
            real_rename(staging["a"], dest)
        real_rename(source, dest)

    monkeypatch.setattr(os, "rename", other_node_first)
    meta = {"files": files, "changed": sorted(files)}
    agent._apply(str(staging["b"]), target, {"files": {}}, meta)
    assert renamed and not os.path.lexists(staging["a"])
    assert Path(target, "d", "x.txt").read_text() == "x"
    assert Path(target, "top.txt").read_text() == "top"
    assert sorted(p.name for p in Path(target).rglob("*")) == ["d", "top.txt", "x.txt"]


def test_a_target_that_is_a_file_by_then_is_not_merged_into(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only a directory put there meanwhile is merged into; anything else fails the sync
    (the caller reports it and keeps the previous tree)."""
    import shutil

    from skyc.runtime import agent

    src = tmp_path / "src"
    write(src, "a.txt", "a")
    staging = tmp_path / ".skyc-staging-b"
    shutil.copytree(src, staging)
    target = tmp_path / "target"
    real_rename = os.rename

    def file_first(source: str, dest: str) -> None:
        (tmp_path / "elsewhere").mkdir()
        target.symlink_to(tmp_path / "elsewhere")  # a link to a directory, then
        real_rename(source, dest)

    monkeypatch.setattr(os, "rename", file_first)
    with pytest.raises(OSError):
        agent._apply(str(staging), str(target), {"files": {}},
                     {"files": scan(src), "changed": ["a.txt"]})
    assert not (tmp_path / "elsewhere" / "a.txt").exists()
