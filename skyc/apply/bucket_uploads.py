"""Uploading a created bucket's local sources: the workdir's ignore rules apply, and
only what changed since the last upload is sent.

What was uploaded (each file's size and modification time) is kept beside the bucket's
stack (``$SKYC_HOME/storage/<bucket>/uploads/``), as the workdir sync keeps what a node
holds: a second upload sends only the files that are new or changed here, without
listing the bucket. The first upload, or one whose record is gone, compares with the
bucket itself (size and MD5 from its listing), so objects already there are not sent
again. Files removed here stay in the bucket (a copy, not a mirror).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from skyc.errors import StorageError
from skyc.storage.uses import BucketUse

Say = Callable[[str, str], None]
Files = dict[str, list[int]]  # relative path -> [size, mtime_ns]
UPLOAD_TIMEOUT_S = 24 * 3600


def _destination(use: BucketUse, path: Path) -> str:
    """One directory's contents go at the bucket's top; else each source by its name."""
    if len(use.uploads) == 1 and path.is_dir():
        return use.remote
    return f"{use.remote}/{path.name}" if path.is_dir() else use.remote


def _record_path(workspace: Path, source: Path, dest: str) -> Path:
    key = hashlib.sha256(f"{source.resolve()}\0{dest}".encode()).hexdigest()[:24]
    return workspace / "uploads" / f"{key}.json"


def _files(root: Path) -> Files:
    from skyc.runtime.sync import scan

    return {rel: [int(e[1]), int(e[2])] for rel, e in sorted(scan(root).items())
            if e[0] == "f"}


def _load(record: Path) -> Files | None:
    try:
        data = json.loads(record.read_text())
    except (OSError, ValueError):
        return None
    files = data.get("files") if isinstance(data, dict) else None
    return files if isinstance(files, dict) else None


def _save(record: Path, dest: str, files: Files) -> None:
    record.parent.mkdir(parents=True, exist_ok=True)
    tmp = record.with_suffix(".tmp")
    tmp.write_text(json.dumps({"dest": dest, "files": files}, sort_keys=True))
    tmp.replace(record)


@contextmanager
def _listing(names: list[str]) -> Iterator[Path]:
    """The names, one per line, in a private file rclone reads (--files-from-raw)."""
    handle, name = tempfile.mkstemp(prefix="skyc-upload-", suffix=".txt")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write("".join(f"{n}\n" for n in names))
        yield Path(name)
    finally:
        Path(name).unlink(missing_ok=True)


def _copy(use: BucketUse, source: str, args: list[str], env: dict[str, str]) -> None:
    from skyc.storage import rclone

    # Objects are compared by size and MD5, which the bucket's listing carries: no
    # request per object for its modification time. An uploaded object is not read
    # back: rclone checks the MD5 in the answer to its upload.
    done = rclone.run([*args, "--checksum", "--s3-no-head"], env, timeout=UPLOAD_TIMEOUT_S)
    if done.returncode != 0:
        raise StorageError(f"{use.field}.source: uploading {source} to {use.url} failed: "
                           f"{rclone.reason(done.stderr)}")


def upload_sources(use: BucketUse, env: dict[str, str], say: Say,
                   workspace: Path | None = None) -> None:
    """Upload ``use``'s local sources into its bucket. ``workspace``: where the record of
    what was uploaded is kept (None: none kept, the bucket is compared each time)."""
    for source in use.uploads:
        path = Path(source).expanduser()
        dest = _destination(use, path)
        if not path.is_dir():
            say("upload", f"{source} -> {use.url}")
            _copy(use, source, ["copy", str(path), dest], env)
            continue
        files = _files(path)
        record = _record_path(workspace, path, dest) if workspace is not None else None
        before = _load(record) if record is not None else None
        changed = [rel for rel, entry in files.items()
                   if before is None or before.get(rel) != entry]
        if before is not None and not changed:
            say("upload", f"{source} -> {use.url}: up to date")
            continue
        say("upload", f"{source} -> {use.url}: {len(changed)} file(s)"
            + ("" if before is None else " changed"))
        with _listing(changed) as listing:
            args = ["copy", str(path), dest, "--files-from-raw", str(listing)]
            # Against the record, the files to send are known: the bucket is not listed.
            _copy(use, source, args + (["--no-traverse"] if before is not None else []),
                  env)
        if record is not None:
            _save(record, dest, files)
