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

from skyc.home import skyc_home

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


class _Store:
    """Where a phase's output is kept locally: chunk by chunk into ``dest``, or, when
    the node's own log of the phase is a file on this machine (``source``), as a hard
    link to it (one copy on disk, which outlives the node's directory). A link that
    cannot be made (another filesystem, no such file yet) falls back to writing."""

    def __init__(self, dest: Path, source: Path | None) -> None:
        self.dest = dest
        self.source = source
        self.fh: BinaryIO | None = None
        self.linked = False

    def _link(self) -> bool:
        if self.source is None or self.fh is not None:
            return False
        try:
            os.link(self.source, self.dest)
        except OSError:
            self.source = None  # write what comes instead
            return False
        self.linked = True
        return True

    def feed(self, chunk: bytes) -> None:
        if self.linked or self._link():
            return
        if self.fh is None:
            self.fh = self.dest.open("ab")
        self.fh.write(chunk)
        self.fh.flush()

    def flush(self) -> None:
        """The phase ended (or a detached one started): link a log that had no output
        yet, so that a detached job's log is kept as it grows."""
        if not self.linked and self.fh is None and self.source is not None \
                and self.source.exists():
            self._link()

    def close(self) -> None:
        if self.fh is not None:
            self.fh.close()
            self.fh = None


class NodeOutput:
    """One node's output: kept raw in its log (``store``) and passed on, prefixed."""

    def __init__(self, store: _Store | None, label: str, on_output: OutputCallback | None,
                 on_line: LineCallback | None) -> None:
        self.store = store
        self.prefixer = Prefixer(label, on_output) if on_output is not None else None
        self.splitter = LineSplitter(label, on_line) if on_line is not None else None

    def feed(self, chunk: bytes) -> None:
        if self.store is not None:
            self.store.feed(chunk)
        if self.prefixer is not None:
            self.prefixer.feed(chunk)
        if self.splitter is not None:
            self.splitter.feed(chunk)

    def flush(self) -> None:
        if self.store is not None:
            self.store.flush()
        if self.prefixer is not None:
            self.prefixer.flush()
        if self.splitter is not None:
            self.splitter.flush()


def log_name(node: str, phase: str) -> str:
    """``<node>.log`` for the run phase, ``<node>.<phase>.log`` for another (setup)."""
    return f"{node}.log" if phase == "run" else f"{node}.{phase}.log"


class JobLog:
    """Each node's output of each phase, stored once (raw bytes): ``<node>.log`` (run)
    and ``<node>.setup.log``; passed on to the caller, prefixed."""

    def __init__(self, directory: Path | None, on_line: LineCallback | None,
                 on_output: OutputCallback | None = None) -> None:
        self.dir = directory
        if directory is not None:
            directory.mkdir(parents=True, exist_ok=True)
        self.on_line = on_line
        self.on_output = on_output
        self._stores: dict[tuple[str, str], _Store] = {}

    def sink(self, node: str, label: str, phase: str = "run",
             source: Path | None = None) -> NodeOutput:
        """``source``: the node's own log of the phase when it is a file on this machine
        (a local node); it is then hard-linked, not copied."""
        store = self._stores.get((node, phase))
        if store is None and self.dir is not None:
            store = self._stores[(node, phase)] = _Store(self.dir / log_name(node, phase),
                                                         source)
        return NodeOutput(store, label, self.on_output, self.on_line)

    def close(self) -> None:
        for store in self._stores.values():
            store.close()


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
