"""Local copies: every node's output (stored once, as bytes) and the cluster's job table."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from skyc.config import skyc_home

LineCallback = Callable[[str, str], None]
OutputCallback = Callable[[bytes], None]  # prefixed output, whole lines where possible

# A line longer than this is passed on in pieces (each piece prefixed), so one huge
# line without a newline never sits in memory whole.
MAX_PENDING = 1 << 16


def cluster_log_root(cluster: str, log_dir: Path | None = None) -> Path:
    """``$SKYC_HOME/logs/<cluster>/`` unless the caller chose another directory."""
    return log_dir if log_dir is not None else skyc_home() / "logs" / cluster


class Prefixer:
    """Adds ``<label> `` at the start of every line of a byte stream, cheaply (one
    ``bytes.replace`` per chunk). Holds back a partial line (up to MAX_PENDING bytes)
    so that lines from several nodes do not interleave mid-line."""

    def __init__(self, label: str, out: OutputCallback) -> None:
        self.prefix = label.encode("utf-8", "replace") + b" "
        self.out = out
        self.pending = b""
        self.at_line_start = True

    def feed(self, chunk: bytes) -> None:
        data = self.pending + chunk if self.pending else chunk
        cut = data.rfind(b"\n")
        if cut < 0:
            self.pending = data
            if len(data) > MAX_PENDING:
                self._emit(data, ends_line=False)
                self.pending = b""
            return
        self.pending = data[cut + 1:]
        self._emit(data[:cut], ends_line=True)
        if len(self.pending) > MAX_PENDING:
            self._emit(self.pending, ends_line=False)
            self.pending = b""

    def _emit(self, body: bytes, *, ends_line: bool) -> None:
        head = self.prefix if self.at_line_start else b""
        text = head + body.replace(b"\n", b"\n" + self.prefix)
        self.out(text + b"\n" if ends_line else text)
        self.at_line_start = ends_line

    def flush(self) -> None:
        if self.pending:
            self._emit(self.pending, ends_line=True)
            self.pending = b""
        elif not self.at_line_start:
            self.out(b"\n")
            self.at_line_start = True


class LineSplitter:
    """Turns a byte stream into decoded lines for a ``(label, line)`` callback (a long
    line is cut at MAX_PENDING bytes)."""

    def __init__(self, label: str, on_line: LineCallback) -> None:
        self.label = label
        self.on_line = on_line
        self.buf = b""

    def feed(self, chunk: bytes) -> None:
        self.buf += chunk
        *lines, self.buf = self.buf.split(b"\n")
        for line in lines:
            self.on_line(self.label, line.decode("utf-8", "replace").rstrip("\r"))
        while len(self.buf) > MAX_PENDING:
            piece, self.buf = self.buf[:MAX_PENDING], self.buf[MAX_PENDING:]
            self.on_line(self.label, piece.decode("utf-8", "replace"))

    def flush(self) -> None:
        if self.buf:
            self.on_line(self.label, self.buf.decode("utf-8", "replace").rstrip("\r"))
            self.buf = b""


class NodeOutput:
    """One node's output: written raw to its log file and passed on, prefixed."""

    def __init__(self, log: BinaryIO | None, label: str, on_output: OutputCallback | None,
                 on_line: LineCallback | None) -> None:
        self.log = log
        self.prefixer = Prefixer(label, on_output) if on_output is not None else None
        self.splitter = LineSplitter(label, on_line) if on_line is not None else None

    def feed(self, chunk: bytes) -> None:
        if self.log is not None:
            self.log.write(chunk)
            self.log.flush()
        if self.prefixer is not None:
            self.prefixer.feed(chunk)
        if self.splitter is not None:
            self.splitter.feed(chunk)

    def flush(self) -> None:
        if self.prefixer is not None:
            self.prefixer.flush()
        if self.splitter is not None:
            self.splitter.flush()


class JobLog:
    """Each node's output in ``<node>.log`` (raw bytes, once), passed on to the caller."""

    def __init__(self, directory: Path | None, on_line: LineCallback | None,
                 on_output: OutputCallback | None = None) -> None:
        self.dir = directory
        if directory is not None:
            directory.mkdir(parents=True, exist_ok=True)
        self.on_line = on_line
        self.on_output = on_output
        self._files: dict[str, BinaryIO] = {}

    def sink(self, node: str, label: str) -> NodeOutput:
        fh = self._files.get(node)
        if fh is None and self.dir is not None:
            fh = self._files[node] = (self.dir / f"{node}.log").open("ab")
        return NodeOutput(fh, label, self.on_output, self.on_line)

    def close(self) -> None:
        for fh in self._files.values():
            fh.close()


_table_lock = threading.Lock()


@contextlib.contextmanager
def _locked(root: Path) -> Iterator[None]:
    """Serializes updates of one job table among threads and processes."""
    root.mkdir(parents=True, exist_ok=True)
    with _table_lock, open(root / "jobs.json.lock", "a") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` through a temporary file of a unique name."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def read_job_table(root: Path) -> list[dict[str, Any]]:
    path = root / "jobs.json"
    try:
        jobs = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    return jobs if isinstance(jobs, list) else []


# A job recorded with one of these has ended: its entry is history and keeps them.
_FINAL = frozenset({"SUCCEEDED", "FAILED", "FAILED_SETUP", "CANCELLED"})


def _merged(old: dict[str, Any] | None, new: dict[str, Any]) -> dict[str, Any]:
    """``new`` over ``old``, except that an ended job keeps its status and the status
    of each node it ended on (a node removed since, or a peer's later view, changes
    nothing)."""
    if old is None or old.get("status") not in _FINAL:
        return new
    nodes = {**(new.get("nodes") or {}), **(old.get("nodes") or {})}
    return {**new, "status": old["status"], "nodes": nodes}


def write_job_table(root: Path, jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The local copy of the cluster's job table (entries merged by job id; an ended
    job's entry keeps its outcome). Returns ``jobs`` as they were recorded."""
    with _locked(root):
        merged = {int(j["job_id"]): j for j in read_job_table(root)}
        recorded = []
        for job in jobs:
            entry = _merged(merged.get(int(job["job_id"])), job)
            merged[int(job["job_id"])] = entry
            recorded.append(entry)
        _write(root, list(merged.values()))
    return recorded


def update_job_table(root: Path, entry: dict[str, Any]) -> None:
    with _locked(root):
        jobs = [j for j in read_job_table(root) if j.get("job_id") != entry["job_id"]]
        _write(root, [*jobs, entry])


def _write(root: Path, jobs: list[dict[str, Any]]) -> None:
    ordered = sorted(jobs, key=lambda j: int(j["job_id"]))
    write_atomic(root / "jobs.json", json.dumps(ordered, indent=1, sort_keys=True) + "\n")
