"""What a job submitted to the controller cluster takes with it: its task file, secret
values taken out, and the files of this machine it names (the workdir, with its ignore
files applied as a sync applies them, and the sources of ``file_mounts``).

They travel as one tar.gz, unpacked on the controller under
``~/.skyc-controller/tasks/<hash>/``; the task file shipped names the copies, by paths
relative to the controller's work dir (``~/.skyc-controller/work``)::

    <task file>                the task file (documents as given, secrets valueless)
    files/<task>/workdir/      a task's workdir
    files/<task>/mount-<n>     a task's n-th local file_mounts source (file or directory)
"""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skyc.task import Task


@dataclass
class Bundle:
    data: bytes          # the tar.gz
    digest: str          # names its directory on the controller
    task_file: str       # the task file's path there, relative to the work dir


@dataclass
class _Entries:
    items: list[tuple[str, Path]] = field(default_factory=list)   # (name in the tar, source)

    def tree(self, arc: str, root: Path, *, ignore_rules: bool) -> None:
        from skyc.runtime.ignore import walk

        self.items.append((arc, root))
        if ignore_rules:
            rels = [rel for rel, _ in walk(root)]
        else:
            rels = sorted(str(p.relative_to(root)) for p in root.rglob("*"))
        self.items += [(f"{arc}/{rel}", root / rel) for rel in rels]


def _local(source: object) -> bool:
    return isinstance(source, str) and "://" not in source


def _path(given: str) -> Path:
    path = Path(given).expanduser()
    return path if path.is_absolute() else Path.cwd() / path


def bundle(task_path: Path, tasks: Sequence[Task]) -> Bundle:
    import yaml

    from skyc.task.reading import read_text

    text = read_text(task_path, str(task_path))
    docs: list[Any] = list(yaml.safe_load_all(text))
    task_docs = docs[len(docs) - len(tasks):]   # a pipeline's header document comes first
    entries = _Entries()
    rewrites: list[tuple[dict[str, Any], Task, int]] = []
    for index, (doc, task) in enumerate(zip(task_docs, tasks, strict=True)):
        if isinstance(doc.get("secrets"), dict):
            doc["secrets"] = {k: None for k in doc["secrets"]}
        if isinstance(task.workdir, str):
            entries.tree(f"files/{index}/workdir", _path(task.workdir), ignore_rules=True)
        for n, (_, source) in enumerate(sorted(task.file_mounts.items())):
            if _local(source):
                assert isinstance(source, str)
                src = _path(source)
                if src.is_dir():
                    entries.tree(f"files/{index}/mount-{n}", src, ignore_rules=False)
                else:
                    entries.items.append((f"files/{index}/mount-{n}", src))
        rewrites.append((doc, task, index))
    files = _tar(entries.items, [])
    digest = hashlib.sha256(text.encode() + files).hexdigest()[:16]
    there = f"../tasks/{digest}"
    for doc, task, index in rewrites:
        if isinstance(task.workdir, str):
            doc["workdir"] = f"{there}/files/{index}/workdir"
        if task.file_mounts:
            doc["file_mounts"] = {
                target: (f"{there}/files/{index}/mount-{n}" if _local(source) else source)
                for n, (target, source) in enumerate(sorted(task.file_mounts.items()))}
    shipped = yaml.safe_dump_all(docs, sort_keys=False).encode()
    return Bundle(_tar(entries.items, [(task_path.name, shipped)]), digest,
                  f"{there}/{task_path.name}")


def _tar(items: list[tuple[str, Path]], texts: list[tuple[str, bytes]]) -> bytes:
    """The entries as a tar.gz (modes and mtimes kept; the gzip header has no time)."""
    import gzip

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in texts:
            member = tarfile.TarInfo(name)
            member.size, member.mode = len(data), 0o600
            tar.addfile(member, io.BytesIO(data))
        for name, path in items:
            st = os.lstat(path)
            member = tarfile.TarInfo(name)
            member.mode, member.mtime = st.st_mode & 0o777, int(st.st_mtime)
            if path.is_symlink():
                member.type, member.linkname = tarfile.SYMTYPE, os.readlink(path)
                tar.addfile(member)
            elif path.is_dir():
                member.type = tarfile.DIRTYPE
                tar.addfile(member)
            elif path.is_file():
                member.size = st.st_size
                with path.open("rb") as fh:
                    tar.addfile(member, fh)
    return gzip.compress(buf.getvalue(), compresslevel=6, mtime=0)
