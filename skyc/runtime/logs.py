"""Local copies: every node's output (stored once, as bytes) and the cluster's job table,
for each incarnation of the cluster apart (see :func:`start_incarnation`)."""

from __future__ import annotations

import contextlib
import datetime
import errno
import fcntl
import hashlib
import json
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from skyc.settings.home import skyc_home

LineCallback = Callable[[str, str], None]
OutputCallback = Callable[[bytes], None]  # prefixed output, whole lines where possible

# A line longer than this is passed on in pieces (each piece prefixed), so one huge
# line without a newline never sits in memory whole.
MAX_PENDING = 1 << 16


def cluster_log_root(cluster: str, log_dir: Path | None = None) -> Path:
    """``$SKYC_HOME/logs/<cluster>/`` unless the caller chose another directory: the
    logs of the cluster's current incarnation (see :func:`start_incarnation`)."""
    if log_dir is not None:
        return log_dir
    root = skyc_home() / "logs" / cluster
    start_incarnation(cluster, root)
    return root


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


def same_file(a: Path, b: Path) -> bool:
    """Whether two paths name one file (one inode: a hard link, or the path itself)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


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
        """Link ``dest`` to ``source``; True also when ``dest`` already is ``source``
        (linked by the exec that started a detached run, when its watcher comes): what
        the node's log holds is then never written again, into itself."""
        if self.source is None or self.fh is not None:
            return False
        try:
            os.link(self.source, self.dest)
        except FileExistsError:
            if not same_file(self.source, self.dest):
                self.source = None  # write what comes instead
                return False
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
    """``new`` over ``old`` (what only ``old`` has, such as the nodes' labels or the
    exit code, stays), except that an ended job keeps its status and the status of
    each node it ended on (a node removed since, or a peer's later view, changes
    nothing)."""
    if old is None:
        return new
    if old.get("status") not in _FINAL:
        return {**old, **new}
    nodes = {**(new.get("nodes") or {}), **(old.get("nodes") or {})}
    return {**old, **new, "status": old["status"], "nodes": nodes}


def _cannot_write(exc: OSError) -> bool:
    """A read-only (or not writable) $SKYC_HOME: the local copies are skipped, so the
    commands that only read (queue, logs, status) still work there."""
    return exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM)


def _merge_into(root: Path, jobs: list[dict[str, Any]]
                ) -> tuple[dict[int, dict[str, Any]], list[dict[str, Any]]]:
    merged = {int(j["job_id"]): j for j in read_job_table(root)}
    recorded = []
    for job in jobs:
        entry = _merged(merged.get(int(job["job_id"])), job)
        merged[int(job["job_id"])] = entry
        recorded.append(entry)
    return merged, recorded


def write_job_table(root: Path, jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The local copy of the cluster's job table (entries merged by job id; an ended
    job's entry keeps its outcome). Returns ``jobs`` as they were recorded (as they
    would be, where the copy cannot be written)."""
    try:
        with _locked(root):
            merged, recorded = _merge_into(root, jobs)
            _write(root, list(merged.values()))
    except OSError as exc:
        if not _cannot_write(exc):
            raise
        _, recorded = _merge_into(root, jobs)
    return recorded


def update_job_table(root: Path, entry: dict[str, Any]) -> None:
    try:
        with _locked(root):
            jobs = [j for j in read_job_table(root) if j.get("job_id") != entry["job_id"]]
            _write(root, [*jobs, entry])
    except OSError as exc:
        if not _cannot_write(exc):
            raise


def _write(root: Path, jobs: list[dict[str, Any]]) -> None:
    ordered = sorted(jobs, key=lambda j: int(j["job_id"]))
    write_atomic(root / "jobs.json", json.dumps(ordered, indent=1, sort_keys=True) + "\n")


# Incarnations: a cluster launched, taken down and launched again under its name gets
# new nodes, whose job ids start at 1 again. The logs of each incarnation are kept
# apart: the current one's in the log root, each earlier one's in ``earlier/<id>/``.

INCARNATION_FILE = "incarnation"  # in the cluster's workspace and in its log root
EARLIER = "earlier"
_HEAD_KEYS = ("transport", "ip", "node_dir", "pod", "namespace", "context")


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8").strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def _head_identity(cluster_file: Path) -> str | None:
    """A short digest of where the cluster's head node is (None: no such cluster)."""
    try:
        nodes = json.loads(cluster_file.read_text(encoding="utf-8")).get("nodes") or []
        head = min(nodes, key=lambda n: int(n.get("rank") or 0))
    except (OSError, ValueError, TypeError, AttributeError):
        return None
    where = json.dumps([head.get(k) for k in _HEAD_KEYS])
    return hashlib.sha256(where.encode()).hexdigest()[:16]


def _stamp(when: float | None = None) -> str:
    moment = datetime.datetime.fromtimestamp(
        time.time() if when is None else when, datetime.timezone.utc)
    return moment.strftime("%Y%m%dT%H%M%S.%fZ")


def start_incarnation(cluster: str, root: Path) -> str | None:
    """The id of the cluster's current incarnation (None when the cluster is not
    launched here). It is kept in the cluster's workspace, which ``down`` removes, with
    the identity of its head node: a workspace without it, or with another head, is a
    new incarnation. The log root records whose logs it holds; when that is another
    incarnation, those logs move to ``earlier/<their id>/`` first."""
    from skyc.model.nodes import CLUSTER_FILE
    from skyc.stacks.workspace import cluster_workspace

    workspace = cluster_workspace(cluster)
    head = _head_identity(workspace / CLUSTER_FILE)
    if head is None:
        return None
    marker = workspace / INCARNATION_FILE
    live = _read_text(marker)
    if live is not None and live.endswith(f" {head}") \
            and live == _read_text(root / INCARNATION_FILE):
        return live.split()[0]
    try:
        with _locked(root):
            live = _read_text(marker)
            if live is None or not live.endswith(f" {head}"):
                live = f"{_stamp()} {head}"
                write_atomic(marker, live + "\n")
            kept = _read_text(root / INCARNATION_FILE)
            if kept != live:
                _set_aside(root, kept.split()[0] if kept else None)
                write_atomic(root / INCARNATION_FILE, live + "\n")
    except OSError as exc:
        if not _cannot_write(exc):
            raise
        return live.split()[0] if live is not None else None
    return live.split()[0]


def _set_aside(root: Path, incarnation: str | None) -> None:
    """Move the jobs in ``root`` (their logs and table) to ``earlier/<incarnation>/``."""
    entries = [p for p in root.iterdir() if p.name.isdigit() or p.name == "jobs.json"]
    if not entries:
        return
    name = incarnation or _stamp(max(p.stat().st_mtime for p in entries))
    dest = root / EARLIER / name
    while dest.exists():
        dest = dest.with_name(dest.name + "+")
    dest.mkdir(parents=True)
    for path in entries:
        os.replace(path, dest / path.name)


def stored_job_ids(directory: Path) -> list[int]:
    """The ids of the jobs whose logs ``directory`` holds, in order."""
    if not directory.is_dir():
        return []
    return sorted(int(p.name) for p in directory.iterdir() if p.name.isdigit() and p.is_dir())


def kept_logs(cluster: str) -> Path | None:
    """Where the logs of the cluster's last incarnation that ran a job are: its log
    root, else the newest of ``earlier/``; None when no job of it left logs here."""
    root = skyc_home() / "logs" / cluster
    earlier = root / EARLIER
    older = sorted(earlier.iterdir(), reverse=True) if earlier.is_dir() else []
    return next((d for d in [root, *older] if stored_job_ids(d)), None)


def _stored_nodes(job_dir: Path, labels: dict[str, str]) -> list[str]:
    found = set()
    for path in job_dir.glob("*.log"):
        name = path.name.removesuffix(".log")
        found.add(name.removesuffix(".setup") if name.endswith(".setup") else name)
    ranked = [n for n in labels if n in found]
    return ranked + sorted(found - set(ranked), key=lambda n: (n != "head", n))


def replay_job(job_dir: Path, labels: dict[str, str], out: OutputCallback) -> None:
    """A job's stored output, node by node (setup, then run, as the nodes show it),
    each line prefixed with the node's label (``labels``: node -> label)."""
    for node in _stored_nodes(job_dir, labels):
        prefixer = Prefixer(labels.get(node) or f"({node})", out)
        for phase in ("setup", "run"):
            path = job_dir / log_name(node, phase)
            if not path.is_file():
                continue
            with path.open("rb") as fh:
                while chunk := fh.read(1 << 20):
                    prefixer.feed(chunk)
        prefixer.flush()


def record_exit_code(root: Path, job_id: int, code: int) -> None:
    """Keep a job's exit code in its entry of the job table (read once its cluster is
    down and its nodes cannot be asked)."""
    with _locked(root):
        jobs = read_job_table(root)
        for job in jobs:
            if job.get("job_id") == job_id:
                job["exit_code"] = code
        _write(root, jobs)
