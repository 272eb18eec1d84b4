"""Receiving a synced tree (``sync-manifest``, ``sync-apply``): the manifest of what
the node has, then a tar stream of what changed, staged and moved into place."""

from __future__ import annotations

import os
import sys

from skyc.runtime.node_agent.base import Args, read_text, skyc_dir, write_atomic, write_trailer

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


# ---------------------------------------------------------------- sync

SINGLE_FILE_MEMBER = ".skyc-single-file"


def resolve_target(target: str) -> str:
    if target.startswith("~"):
        return os.path.expanduser(target)
    if os.path.isabs(target):
        return target
    return os.path.join(os.path.expanduser("~"), target)


def sync_key(target: str) -> str:
    """Sync state is kept per target as the caller spells it (``~/sky_workdir``), so that
    the caller can read it with a plain ``cat`` (``~/.skyc/sync/<key>.json`` and ``.id``)."""
    import hashlib

    return hashlib.sha256(target.encode("utf-8")).hexdigest()[:24]


def _manifest_path(target: str) -> str:
    return os.path.join(skyc_dir(), "sync", sync_key(target) + ".json")


def load_manifest(target: str) -> dict[str, Any]:
    import json

    text = read_text(_manifest_path(target))
    return json.loads(text) if text else {"id": None, "files": {}}


def cmd_sync_manifest(args: Args) -> int:
    import json

    exists = os.path.lexists(resolve_target(args.target))
    print(json.dumps(load_manifest(args.target) if exists else {"id": None, "files": {}}))
    return 0


def _safe_rel(name: str) -> str:
    norm = os.path.normpath(name)
    if norm.startswith("..") or os.path.isabs(norm):
        raise ValueError(f"unsafe path in sync stream: {name!r}")
    return norm


def _read_exact(fd: int, size: int) -> bytes:
    parts = []
    while size > 0:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            raise ValueError("sync stream ended early")
        parts.append(chunk)
        size -= len(chunk)
    return b"".join(parts)


def _read_meta(fd: int) -> dict[str, Any]:
    """The stream starts with ``<length>\\n`` and the manifest (JSON) of that length."""
    import json

    line = b""
    while not line.endswith(b"\n"):
        byte = os.read(fd, 1)
        if not byte or len(line) > 20:
            raise ValueError("sync stream does not start with its manifest")
        line += byte
    meta: dict[str, Any] = json.loads(_read_exact(fd, int(line)).decode("utf-8"))
    return meta


def _drain(fd: int) -> None:
    while os.read(fd, 1 << 20):
        pass


def _extract_with_tar(fd: int, staging: str, tar_bin: str) -> None:
    import subprocess

    proc = subprocess.run([tar_bin, "-x", "-p", "--no-same-owner", "-f", "-", "-C", staging],
                          stdin=fd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          check=False)
    if proc.returncode != 0:
        raise ValueError("tar: " + proc.stderr.decode("utf-8", "replace").strip()[-500:])


def _extract_with_tarfile(fd: int, staging: str) -> None:
    import shutil
    import tarfile

    dirs = []
    with os.fdopen(os.dup(fd), "rb") as stream, tarfile.open(
            fileobj=stream, mode="r|", encoding="utf-8") as tar:
        for member in tar:
            rel = _safe_rel(member.name)
            dest = os.path.join(staging, rel)
            parent = os.path.dirname(dest)
            if not os.path.isdir(parent):
                os.makedirs(parent)
            if member.isdir():
                os.makedirs(dest, exist_ok=True)
                dirs.append((dest, member))
            elif member.issym():
                os.symlink(member.linkname, dest)
            elif member.isfile():
                src = tar.extractfile(member)
                with open(dest, "wb") as fh:
                    if src is not None:
                        shutil.copyfileobj(src, fh, 1 << 20)
                os.chmod(dest, member.mode & 0o7777)
                os.utime(dest, (member.mtime, member.mtime))
    for dest, member in reversed(dirs):
        os.chmod(dest, member.mode & 0o7777)


def _verify(staging: str, meta: dict[str, Any]) -> None:
    """Every changed entry arrived whole (a stream cut at a member boundary is caught here)."""
    for rel in meta["changed"]:
        kind, size = meta["files"][rel][:2]
        path = os.path.join(staging, SINGLE_FILE_MEMBER if rel == "." else rel)
        if not os.path.lexists(path):
            raise ValueError(f"sync stream incomplete: {rel} missing")
        if kind == "f" and os.lstat(path).st_size != size:
            raise ValueError(f"sync stream incomplete: {rel} truncated")


def _remove(path: str) -> None:
    import shutil

    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)


def _apply(staging: str, target: str, old: dict[str, Any], meta: dict[str, Any]) -> None:
    """Put the staged tree in place at ``target`` (``staging`` is empty when nothing
    changed): moved there whole when nothing is there yet, otherwise its changed entries
    moved in and the entries the new tree no longer has removed."""
    new_files: dict[str, Any] = meta["files"]
    if "." in new_files:  # a single-file mount: the target itself is the file
        if "." in meta["changed"]:
            _replace_file(os.path.join(staging, SINGLE_FILE_MEMBER), target)
        return
    if _place_whole(staging, target):
        return
    _move_changed(staging, target, meta["changed"], new_files)
    _remove_gone(target, old.get("files", {}), new_files)


def _replace_file(src: str, dest: str) -> None:
    """Move the file ``src`` to ``dest``, over a directory there too."""
    import shutil

    if os.path.isdir(dest) and not os.path.islink(dest):
        shutil.rmtree(dest)
    os.replace(src, dest)


def _place_whole(staging: str, target: str) -> bool:
    """The staged tree renamed to ``target`` when nothing (or a file) is there; False
    when a directory is there and the changed entries have to be moved into it."""
    if os.path.lexists(target) and (not os.path.isdir(target) or os.path.islink(target)):
        _remove(target)
    if os.path.lexists(target):
        return False
    os.makedirs(os.path.dirname(target) or "/", exist_ok=True)
    if not staging:
        os.makedirs(target, exist_ok=True)
        return True
    try:
        os.rename(staging, target)
        return True
    except OSError:
        if not os.path.isdir(target) or os.path.islink(target):
            raise
    # Another node on the same filesystem (a local cluster's nodes, a shared mount)
    # put its copy there first: the changed files (all of them) are moved into it.
    return False


def _move_changed(staging: str, target: str, changed: list[str],
                  new_files: dict[str, Any]) -> None:
    """Each changed entry from the staging tree into ``target``, parents first."""
    for rel in sorted(changed, key=lambda p: p.count("/")):
        src = os.path.join(staging, rel)
        dest = os.path.join(target, rel)
        if new_files[rel][0] == "d":
            if os.path.lexists(dest) and (os.path.islink(dest) or not os.path.isdir(dest)):
                os.unlink(dest)
            os.makedirs(dest, exist_ok=True)
            os.chmod(dest, os.stat(src).st_mode & 0o7777)
            continue
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        _replace_file(src, dest)


def _remove_gone(target: str, old_files: dict[str, Any], new_files: dict[str, Any]) -> None:
    """The entries of the previous tree the new one no longer has, children first."""
    import contextlib

    gone = [p for p in old_files if p not in new_files]
    for rel in sorted(gone, key=lambda p: -p.count("/")):
        dest = os.path.join(target, rel)
        if old_files[rel][0] == "d":
            with contextlib.suppress(OSError):  # not empty: it holds files the job wrote
                os.rmdir(dest)
        elif os.path.lexists(dest) and not os.path.isdir(dest):
            os.unlink(dest)


def cmd_sync_apply(args: Args) -> int:
    import json
    import shutil
    import tarfile
    import uuid

    target = resolve_target(args.target)
    old = load_manifest(args.target)
    if not os.path.lexists(target):
        old = {"id": None, "files": {}}
    staging = ""
    try:
        meta = _read_meta(0)
        if meta.get("base") != old.get("id"):
            if meta["changed"]:
                _drain(0)
            sys.stdout.write(json.dumps({"stale": True, "id": old.get("id")}) + "\n")
            write_trailer(3)
            return 0
        if meta["changed"]:
            parent = os.path.dirname(target.rstrip("/")) or "/"
            os.makedirs(parent, exist_ok=True)
            staging = os.path.join(parent, ".skyc-staging-" + uuid.uuid4().hex[:12])
            os.makedirs(staging)
            tar_bin = shutil.which("tar")
            if tar_bin:
                _extract_with_tar(0, staging, tar_bin)
            else:
                _extract_with_tarfile(0, staging)
            _verify(staging, meta)
        if not meta.get("noop"):
            _apply(staging, target, old, meta)
            manifest = _manifest_path(args.target)
            os.makedirs(os.path.dirname(manifest), exist_ok=True)
            write_atomic(manifest, json.dumps({"id": meta["id"], "files": meta["files"]}))
            write_atomic(manifest[:-len(".json")] + ".id", meta["id"])
    except (tarfile.TarError, ValueError, OSError, EOFError) as exc:
        sys.stderr.write(f"sync to {target} failed, previous tree kept: {exc}\n")
        write_trailer(1)
        return 0
    finally:
        if staging and os.path.lexists(staging):
            shutil.rmtree(staging, ignore_errors=True)
    sys.stdout.write(json.dumps({"stale": False, "id": meta["id"]}) + "\n")
    write_trailer(0)
    return 0


