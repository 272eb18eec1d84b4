"""The transport seam: run a command on a node, stream its output, feed its stdin.

A node's ``transport`` names its entry in a registry (:func:`register_transport`):
``local`` (:class:`LocalTransport`, subprocesses; the node's home is its
``node_dir``), ``ssh`` (``skyc.runtime.ssh.SshTransport``, asyncssh) and
``kubernetes`` (``skyc.runtime.kube.KubeTransport``, the API server's exec stream),
the last two imported when a node needs them. Uploading a file is running
``cat > path`` with the file on stdin, so all share it. Cancelling a command is
cancelling the coroutine that runs it.

Each transport calls the library that reaches its nodes only inside its error
boundary (:mod:`skyc.runtime.transport_errors`): its table says which of that
library's exceptions become which TransportError. The local transport's,
:data:`LOCAL`, maps what starting a process raises.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import NamedTuple, Protocol

from skyc.errors import TransportError
from skyc.model.nodes import Node
from skyc.runtime.transport_errors import ErrorTable, Rule

OutputSink = Callable[[bytes], None]
StdinSource = bytes | AsyncIterator[bytes] | None


class CommandResult(NamedTuple):
    exit_code: int
    stdout: bytes
    stderr: bytes


class Transport(Protocol):
    node: Node

    async def connect(self, timeout: float) -> None: ...

    async def run(
        self,
        command: str,
        *,
        stdin: StdinSource = None,
        on_stdout: OutputSink | None = None,
        timeout: float | None = None,
    ) -> CommandResult: ...

    async def close(self) -> None: ...


async def feed_stdin(writer: Callable[[bytes], None], drain: Callable[[], object],
                     close: Callable[[], None], stdin: StdinSource) -> None:
    """Write bytes or an async stream of chunks to a process's stdin, then close it."""
    if isinstance(stdin, bytes):
        writer(stdin)
        await _maybe_await(drain())
    elif stdin is not None:
        async for chunk in stdin:
            writer(chunk)
            await _maybe_await(drain())
    close()


class StreamIn(Protocol):
    """A process's stdout or stderr."""

    async def read(self, n: int) -> bytes: ...


class StreamOut(Protocol):
    """A process's stdin."""

    def write(self, data: bytes) -> None: ...

    def drain(self) -> object: ...


async def exchange(
    stdout: StreamIn, stderr: StreamIn, pipe: StreamOut, *,
    close_stdin: Callable[[], None], stdin: StdinSource, on_stdout: OutputSink | None,
) -> tuple[bytes, bytes]:
    """Feed a process's stdin while reading its stdout and stderr to their ends.

    Returns (stdout, stderr); stdout is empty when ``on_stdout`` takes it chunk by
    chunk. A process that stops reading its stdin does not fail the exchange.
    """
    out: list[bytes] = []
    err: list[bytes] = []

    async def read_out() -> None:
        while chunk := await stdout.read(1 << 20):
            if on_stdout is not None:
                on_stdout(chunk)
            else:
                out.append(chunk)

    async def read_err() -> None:
        while chunk := await stderr.read(1 << 16):
            err.append(chunk)

    async def feed() -> None:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            await feed_stdin(pipe.write, pipe.drain, close_stdin, stdin)

    await asyncio.gather(feed(), read_out(), read_err())
    return b"".join(out), b"".join(err)


async def _maybe_await(value: object) -> None:
    if asyncio.iscoroutine(value) or isinstance(value, asyncio.Future):
        await value


async def upload_bytes(transport: Transport, data: bytes, remote_path: str, mode: int) -> None:
    """Write data to remote_path on the node (``~`` allowed), atomically."""
    quoted = remote_path.replace("~/", "$HOME/", 1) if remote_path.startswith("~/") else remote_path
    cmd = (f'p="{quoted}"; mkdir -p "$(dirname "$p")" && cat > "$p.tmp.$$" '
           f'&& chmod {mode:o} "$p.tmp.$$" && mv -f "$p.tmp.$$" "$p"')
    res = await transport.run(cmd, stdin=data, timeout=60)
    if res.exit_code != 0:
        raise TransportError(
            f"node {transport.node.name}: could not write {remote_path}: "
            f"{res.stderr.decode(errors='replace').strip()}")


LOCAL = ErrorTable("local", {
    "builtins.OSError": Rule(TransportError, "node {node}: {doing}: {exc}"),
    "subprocess.SubprocessError": Rule(TransportError, "node {node}: {doing}: {exc}"),
})


class LocalTransport:
    """Runs commands as subprocesses of this machine, with HOME set to the node's directory."""

    def __init__(self, node: Node) -> None:
        if not node.node_dir:
            raise TransportError(f"local node {node.name} has no node_dir")
        self.node = node
        self.home = Path(node.node_dir)

    def _errors(self, doing: str) -> AbstractContextManager[None]:
        return LOCAL.boundary(node=self.node.name, doing=doing)

    async def connect(self, timeout: float) -> None:
        with self._errors(f"cannot create its directory {self.home}"):
            self.home.mkdir(parents=True, exist_ok=True)

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["HOME"] = str(self.home)
        return env

    async def run(
        self,
        command: str,
        *,
        stdin: StdinSource = None,
        on_stdout: OutputSink | None = None,
        timeout: float | None = None,
    ) -> CommandResult:
        from skyc.runtime.local_process import LocalProcess

        with self._errors("cannot start bash"):
            proc = await LocalProcess.start(command, self.home, self._env())
        assert proc.stdin is not None
        io = exchange(proc.stdout, proc.stderr, proc.stdin, close_stdin=proc.close_stdin,
                      stdin=stdin, on_stdout=on_stdout)
        try:
            (out, err), code = await asyncio.wait_for(asyncio.gather(io, proc.wait()), timeout)
        except BaseException as exc:  # timeout, cancellation, or a failing stdin source
            await proc.end()
            if isinstance(exc, asyncio.TimeoutError):
                raise TransportError(
                    f"node {self.node.name}: command timed out after {timeout} s") from None
            raise
        proc.close_pipes()
        return CommandResult(code, out, err)

    async def close(self) -> None:
        return None


TransportFactory = Callable[[Node, Path, float], Transport]


class TransportKind(NamedTuple):
    """How the nodes of one transport are reached: ``factory(node, workspace,
    connect_timeout)`` makes a node's transport, and ``python`` (a shell word) starts
    the node agent's Python there."""

    factory: TransportFactory
    python: str = "python3"


_KINDS: dict[str, TransportKind] = {}


def register_transport(name: str, factory: TransportFactory, *,
                       python: str = "python3") -> TransportKind | None:
    """Reach the nodes whose ``transport`` is ``name`` through ``factory``. Returns the
    entry it replaces (None for a new name), so that a caller can put it back."""
    previous = _KINDS.get(name)
    _KINDS[name] = TransportKind(factory, python)
    return previous


def unregister_transport(name: str) -> None:
    _KINDS.pop(name, None)


def transport_kind(node: Node) -> TransportKind:
    """The registry's entry for the node's transport; TransportError when none."""
    kind = _KINDS.get(node.transport)
    if kind is None:
        raise TransportError(f"node {node.name}: no transport '{node.transport}' is "
                             f"registered (known: {', '.join(sorted(_KINDS))})",
                             hint="register it with skyc.runtime.transport.register_transport")
    return kind


def make_transport(node: Node, workspace: Path, connect_timeout: float) -> Transport:
    """The node's transport, made by the factory registered for its name."""
    return transport_kind(node).factory(node, workspace, connect_timeout)


def agent_python(node: Node) -> str:
    """How the node agent's Python is started on the node (a shell word)."""
    return transport_kind(node).python


def _local(node: Node, workspace: Path, connect_timeout: float) -> Transport:
    return LocalTransport(node)


def _ssh(node: Node, workspace: Path, connect_timeout: float) -> Transport:
    from skyc.runtime.ssh import SshTransport

    return SshTransport(node, workspace, connect_timeout=connect_timeout)


def _kubernetes(node: Node, workspace: Path, connect_timeout: float) -> Transport:
    from skyc.runtime.kube import KubeTransport

    return KubeTransport(node, workspace, connect_timeout=connect_timeout)


# A local node runs the agent on skyc's own Python; the others on the node's python3.
register_transport("local", _local, python=shlex.quote(sys.executable))
register_transport("ssh", _ssh)
register_transport("kubernetes", _kubernetes)
