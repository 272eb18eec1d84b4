"""Incremental sync of a local directory (or file) to a path on a node.

The local tree is scanned (honouring ignore files) into a manifest of
``[kind, size, mtime_ns, mode, link]`` per path. The manifest last applied to
each node is cached in the cluster workspace (and kept by the agent on the
node); only entries that differ are sent: ``<length>\\n<manifest JSON>`` then
one tar stream, built once and shared by the nodes that need the same entries.
The agent unpacks the stream into a staging directory next to the target and
applies it with renames only once the whole stream has arrived and checked out,
so a sync that fails half-way leaves the previous tree as it was. A resync with
nothing changed sends only the manifest's id."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import shlex
import stat
import threading
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from skyc.errors import RuntimeAgentError
from skyc.runtime.agent import SINGLE_FILE_MEMBER, sync_key
from skyc.runtime.ignore import walk
from skyc.runtime.remote import NodeAgent, parse_trailer, read_probe

Manifest = dict[str, list[Any]]
CHUNK = 1 << 20


def _entry(st: Any, link: str = "") -> list[Any]:
    mode = stat.S_IMODE(st.st_mode)
    if stat.S_ISLNK(st.st_mode):
        return ["l", 0, 0, 0, link]
    if stat.S_ISDIR(st.st_mode):
        return ["d", 0, 0, mode, ""]
    return ["f", st.st_size, st.st_mtime_ns, mode, ""]


def scan(source: Path) -> Manifest:
    """The manifest of a local directory (ignore files honoured) or of a single file."""
    if not source.exists():
        raise RuntimeAgentError(f"{source}: no such file or directory to upload")
    if not source.is_dir():
        return {".": _entry(source.stat())}
    files: Manifest = {}
    for rel, st in walk(source):
        try:
            rel.encode("utf-8")
        except UnicodeEncodeError:
            raise RuntimeAgentError(
                f"{source}: file name {rel!r} is not valid UTF-8; rename it or ignore it "
                "in .skyignore") from None
        if stat.S_ISLNK(st.st_mode):
            files[rel] = _entry(st, str((source / rel).readlink()))
        elif stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode):
            files[rel] = _entry(st)
    return files


def changed_paths(old: Manifest, new: Manifest) -> list[str]:
    return [p for p, e in new.items() if old.get(p) != e]


_BLOCK = 512


def write_tar(write: Callable[[bytes], object], source: Path, files: Manifest,
              changed: list[str]) -> None:
    """The changed entries as a tar stream (GNU format, no per-file extended headers)."""
    import tarfile  # only when something changed: not on the start of every exec

    pending = bytearray()

    def emit(data: bytes) -> None:
        pending.extend(data)
        if len(pending) >= CHUNK:
            write(bytes(pending))
            pending.clear()

    for rel in changed:
        kind, size, mtime_ns, mode, link = files[rel]
        info = tarfile.TarInfo(SINGLE_FILE_MEMBER if rel == "." else rel)
        info.mode = mode
        if kind == "d":
            info.type = tarfile.DIRTYPE
        elif kind == "l":
            info.type = tarfile.SYMTYPE
            info.linkname = link
        else:
            info.size = size
            info.mtime = mtime_ns // 1_000_000_000
        emit(info.tobuf(tarfile.GNU_FORMAT, "utf-8", "surrogateescape"))
        if kind != "f":
            continue
        path = source if rel == "." else source / rel
        with path.open("rb") as fh:
            left = size
            while left > 0:
                chunk = fh.read(min(left, CHUNK))
                if not chunk:
                    break
                emit(chunk)
                left -= len(chunk)
            if left or os.fstat(fh.fileno()).st_size != size:
                raise RuntimeAgentError(
                    f"{path}: changed while it was being uploaded; run again")
        if size % _BLOCK:
            emit(b"\0" * (_BLOCK - size % _BLOCK))
    emit(b"\0" * (2 * _BLOCK))
    if pending:
        write(bytes(pending))


class TarFanout:
    """Builds one tar stream in a thread and hands its chunks to several consumers."""

    def __init__(self, source: Path, files: Manifest, changed: list[str], consumers: int) -> None:
        self.source, self.files, self.changed = source, files, changed
        self.loop = asyncio.get_running_loop()
        self.queues: list[asyncio.Queue[bytes | BaseException | None]] = [
            asyncio.Queue(maxsize=8) for _ in range(consumers)]
        self.closed = [False] * consumers
        self.thread: threading.Thread | None = None

    def _put(self, item: bytes | BaseException | None) -> None:
        for i, q in enumerate(self.queues):
            fut = asyncio.run_coroutine_threadsafe(q.put(item), self.loop)
            while not self.closed[i]:
                try:
                    fut.result(timeout=0.5)
                    break
                except TimeoutError:
                    continue
            else:
                fut.cancel()
        if all(self.closed):
            raise RuntimeAgentError("sync stream abandoned by every node")

    def _produce(self) -> None:
        try:
            write_tar(self._put, self.source, self.files, self.changed)
            self._put(None)
        except BaseException as exc:  # handed to the consumers, which raise it
            with contextlib.suppress(BaseException):
                self._put(exc)

    async def consume(self, index: int, head: bytes) -> AsyncIterator[bytes]:
        yield head
        if not self.changed:
            return
        if self.thread is None:
            self.thread = threading.Thread(target=self._produce, daemon=True)
            self.thread.start()
        try:
            while True:
                item = await self.queues[index].get()
                if item is None:
                    return
                if isinstance(item, OSError):
                    raise RuntimeAgentError(f"{self.source}: cannot read for upload: {item}")
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            self.closed[index] = True


class SyncCache:
    """The manifest last applied to each node, kept in the cluster workspace."""

    def __init__(self, workspace: Path) -> None:
        self.root = workspace / "sync"

    def _path(self, node: str, target: str) -> Path:
        key = hashlib.sha256(f"{node}\0{target}".encode()).hexdigest()[:24]
        return self.root / f"{key}.json"

    def load(self, node: str, target: str) -> dict[str, Any] | None:
        path = self._path(node, target)
        if not path.exists():
            return None
        try:
            data: dict[str, Any] = json.loads(path.read_text())
        except (OSError, ValueError):
            return None
        return data

    def save(self, node: str, target: str, ident: str, files: Manifest) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        path = self._path(node, target)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"id": ident, "files": files}, sort_keys=True))
        tmp.replace(path)


async def _sync_group(agents: list[NodeAgent], source: Path, files: Manifest, target: str,
                      cache: SyncCache, known: list[dict[str, Any]]) -> list[int | None]:
    """One sync attempt per node; nodes whose trees differ the same way share a tar stream.
    Returns the entries sent per node, None where the node's tree was not what we knew."""
    plans = []
    for node_known in known:
        old = node_known.get("files", {})
        changed = changed_paths(old, files)
        noop = node_known.get("id") is not None and not changed and old.keys() == files.keys()
        plans.append((node_known.get("id"), changed, noop))
    fanouts: dict[tuple[str, ...], TarFanout] = {}
    slots: list[tuple[TarFanout, int]] = []
    for _, changed, _ in plans:
        key = tuple(changed)
        if key not in fanouts:
            fanouts[key] = TarFanout(source, files, changed, 0)
        fan = fanouts[key]
        fan.queues.append(asyncio.Queue(maxsize=8))
        fan.closed.append(False)
        slots.append((fan, len(fan.queues) - 1))

    async def one(i: int) -> int | None:
        agent = agents[i]
        base, changed, noop = plans[i]
        new_id = base if noop else uuid.uuid4().hex
        meta = json.dumps({"base": base, "id": new_id, "noop": noop, "changed": changed,
                           "files": {} if noop else files}).encode()
        fan, index = slots[i]
        stream = fan.consume(index, str(len(meta)).encode() + b"\n" + meta)
        res = await agent.call(f"sync-apply {shlex.quote(target)}", stdin=stream, timeout=None)
        code = parse_trailer(res, f"sync of {source} to {target}", agent.name)
        if code == 3:
            return None
        if code != 0:
            raise RuntimeAgentError(
                f"node {agent.name}: sync of {source} to {target} failed: "
                f"{res.stderr.decode(errors='replace').strip()[-2000:]}")
        assert new_id is not None
        cache.save(agent.name, target, new_id, files)
        return len(changed)

    return list(await asyncio.gather(*(one(i) for i in range(len(agents)))))


async def sync_nodes(agents: list[NodeAgent], source: Path, files: Manifest, target: str,
                     cache: SyncCache) -> list[int]:
    """Bring ``target`` on every node to the state of ``files``; returns entries sent per node."""

    async def knowledge(agent: NodeAgent, ask_node: bool) -> dict[str, Any]:
        cached = None if ask_node else cache.load(agent.name, target)
        if cached is not None:
            return cached
        text = await remote_state(agent, target, "json")
        try:
            node_manifest: dict[str, Any] = json.loads(text) if text else {}
        except ValueError:
            node_manifest = {}
        return node_manifest or {"id": None, "files": {}}

    known = list(await asyncio.gather(*(knowledge(a, False) for a in agents)))
    sent = await _sync_group(agents, source, files, target, cache, known)
    stale = [i for i, n in enumerate(sent) if n is None]
    if stale:  # the node's tree is not what the cache says: ask those nodes, once
        again_agents = [agents[i] for i in stale]
        again_known = list(await asyncio.gather(*(knowledge(a, True) for a in again_agents)))
        again = await _sync_group(again_agents, source, files, target, cache, again_known)
        for i, n in zip(stale, again, strict=True):
            if n is None:
                raise RuntimeAgentError(
                    f"node {agents[i].name}: sync of {source} to {target} kept changing")
            sent[i] = n
    return [n or 0 for n in sent]


async def sync_to_node(agent: NodeAgent, source: Path, files: Manifest, target: str,
                       cache: SyncCache) -> int:
    """Bring ``target`` on one node to the state of ``files``; returns the entries sent."""
    return (await sync_nodes([agent], source, files, target, cache))[0]


def _target_word(target: str) -> str:
    """The node's path of a sync target, as a shell word."""
    if target == "~":
        return '"$HOME"'
    if target.startswith("~/"):
        return '"$HOME"/' + shlex.quote(target[2:])
    if target.startswith("/"):
        return shlex.quote(target)
    return '"$HOME"/' + shlex.quote(target)


def _state_file(target: str, suffix: str) -> str:
    return f'"$HOME/.skyc/sync/{sync_key(target)}.{suffix}"'


def _remote_state_command(target: str, suffix: str) -> str:
    """A shell command printing the node's sync state file for target (empty: none)."""
    return f"[ -e {_target_word(target)} ] && cat {_state_file(target, suffix)} 2>/dev/null; true"


async def remote_state(agent: NodeAgent, target: str, suffix: str) -> str:
    res = await agent.transport.run(_remote_state_command(target, suffix), timeout=60)
    return res.stdout.decode("utf-8", "replace").strip()


def id_probes(targets: list[str]) -> dict[str, str]:
    """For :meth:`ClusterSession.ensure`: the probes that read each target's tree id (with
    the shell's ``read``), so that checking the agent also learns what the node holds
    (:func:`sync_tree` uses it)."""
    return {_probe_name(t): read_probe(_state_file(t, "id"), f"[ -e {_target_word(t)} ]")
            for t in targets}


def _probe_name(target: str) -> str:
    return f"sync-id:{target}"


async def _tree_id(agent: NodeAgent, target: str) -> str:
    """The id of the tree the node holds at ``target``: learnt when the session opened
    (once: a later sync of the same target asks again), else asked now."""
    known = agent.probed.pop(_probe_name(target), None)
    return known if known is not None else await remote_state(agent, target, "id")


async def sync_tree(agents: list[NodeAgent], source: Path, target: str,
                    cache: SyncCache) -> list[int]:
    """Scan ``source`` and bring ``target`` on every node up to date; returns entries sent.

    While the local tree is scanned, each node is asked (with a plain ``cat``) for the id
    of the tree it holds; nodes whose id matches the cache, when nothing changed locally,
    need nothing more."""

    cached = [cache.load(a.name, target) for a in agents]
    scanning = asyncio.ensure_future(asyncio.to_thread(scan, source))
    try:
        ids = await asyncio.gather(*(_tree_id(a, target)
                                     for a, c in zip(agents, cached, strict=True)
                                     if c is not None))
    finally:
        files = await scanning
    it = iter(ids)
    todo = []
    for i, c in enumerate(cached):
        if c is None or next(it) != c.get("id") or c.get("files") != files:
            todo.append(i)
    sent = [0] * len(agents)
    if todo:
        done = await sync_nodes([agents[i] for i in todo], source, files, target, cache)
        for i, n in zip(todo, done, strict=True):
            sent[i] = n
    return sent
