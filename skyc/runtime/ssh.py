"""SSH transport (asyncssh, imported lazily) with host keys pinned per cluster.

The first connection to a node records its host key in ``<workspace>/known_hosts``;
later connections accept only that key. A changed key is refused. A node with a
``proxy_command`` (a bastion or jump host) is reached through that command's stdin and
stdout instead of a TCP connection of skyc's own, as OpenSSH's ``ProxyCommand``.

asyncssh is called only inside the transport's error boundary, :data:`SSH`: its table
maps every exception asyncssh defines, and the OS's socket errors, to a TransportError,
and says which of them a node that is not up yet raises (connecting again may work).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import shlex
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, TypeVar

from skyc.errors import TransportError
from skyc.model.nodes import Node
from skyc.runtime.transport import CommandResult, OutputSink, StdinSource, exchange
from skyc.runtime.transport_errors import ErrorTable, Rule

DEFAULT_KEY_NAMES = ("id_ed25519", "id_ecdsa", "id_rsa", "ssh_key")
PREFERRED_CIPHERS = ["aes128-gcm@openssh.com", "aes256-gcm@openssh.com",
                     "chacha20-poly1305@openssh.com", "aes128-ctr", "aes256-ctr"]
_TOKEN = re.compile(r"%([hpr%])")  # OpenSSH's ProxyCommand tokens that skyc fills in
# Pauses between connection attempts to a node that does not answer: short, so a node
# whose sshd starts listening is reached within about a second.
RETRY_FIRST_S = 0.25
RETRY_MAX_S = 1.0
MIN_ATTEMPT_S = 1.0  # the shortest time one attempt is given, even past the deadline

RetryCallback = Callable[[str], None]  # (why the last attempt failed)


class Unreachable(Exception):
    """The node did not answer before the deadline (not a SkycError: the callers of
    :meth:`SshTransport.reach` turn it into one that says what they waited for)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def why_unreachable(exc: BaseException) -> str:
    """A failed attempt in a few words: connection refused, timed out, no route to host."""
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return "timed out"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror[:1].lower() + exc.strerror[1:]
    return str(exc) or type(exc).__name__


_CHANGED_KEY_HINT = ("if the node was re-created on purpose, remove its line from that file "
                     "and retry; otherwise someone may be intercepting the connection")
_REFUSED_KEY_HINT = ("check that the node's identity_file is the key whose public half is in "
                     "the user's ~/.ssh/authorized_keys on the node (and the user name is right)")
_FAILED = "node {node}: {doing}: {reason}"

# Every exception class asyncssh defines is a row or a subclass of one (a test checks).
SSH = ErrorTable("ssh", {
    "asyncssh.HostKeyNotVerifiable": Rule(
        TransportError, "node {node}: host key does not match the key pinned in "
        "{known_hosts}: {exc}", hint=_CHANGED_KEY_HINT),
    "asyncssh.PermissionDenied": Rule(
        TransportError, "node {node}: the SSH server refused the key ({keys}): {exc}",
        hint=_REFUSED_KEY_HINT, retry="grace"),
    "asyncssh.Error": Rule(TransportError, _FAILED, retry="yes"),
    "asyncssh.KeyImportError": Rule(TransportError, "node {node}: {doing}: cannot read the "
                                    "SSH key ({keys}): {exc}"),
    "asyncssh.KeyEncryptionError": Rule(TransportError, "node {node}: {doing}: cannot decrypt "
                                        "the SSH key ({keys}): {exc}"),
    "asyncssh.KeyExportError": Rule(TransportError, _FAILED),
    "asyncssh.KeyGenerationError": Rule(TransportError, _FAILED),
    "asyncssh.ConfigParseError": Rule(TransportError, "node {node}: {doing}: SSH config: {exc}"),
    "asyncssh.PasswordChangeRequired": Rule(TransportError, "node {node}: {doing}: the server "
                                            "asks for a new password: {exc}"),
    "asyncssh.ChannelListenError": Rule(TransportError, _FAILED),
    "asyncssh.BreakReceived": Rule(TransportError, _FAILED),
    "asyncssh.SignalReceived": Rule(TransportError, _FAILED),
    "asyncssh.TerminalSizeChanged": Rule(TransportError, _FAILED),
    # refused, timed out, no route to host, reset: a node that is not up yet
    "builtins.OSError": Rule(TransportError, _FAILED, retry="yes"),
}, reason=why_unreachable)


def host_pattern(host: str, port: int) -> str:
    return host if port == 22 else f"[{host}]:{port}"


def pinned_entries(known_hosts: Path, pattern: str) -> list[str]:
    if not known_hosts.exists():
        return []
    lines = known_hosts.read_text().splitlines()
    return [ln for ln in lines if ln.split(" ", 1)[0] == pattern]


def proxy_argv(node: Node) -> list[str] | None:
    """The node's proxy command as arguments, with OpenSSH's ``%h`` (host), ``%p``
    (port), ``%r`` (user) and ``%%`` substituted; None when it has none."""
    if not node.proxy_command:
        return None
    try:
        words = shlex.split(node.proxy_command)
    except ValueError as exc:
        raise TransportError(f"node {node.name}: ssh proxy command "
                             f"{node.proxy_command!r} cannot be parsed: {exc}") from None
    if not words:
        return None
    values = {"h": node.host or node.ip, "p": str(node.port), "r": node.user or "", "%": "%"}
    return [_TOKEN.sub(lambda m: values[m.group(1)], w) for w in words]


def client_keys(node: Node, workspace: Path) -> list[str]:
    if node.identity_file:
        path = Path(node.identity_file).expanduser()
        if not path.exists():
            raise TransportError(f"node {node.name}: identity_file {path} does not exist")
        return [str(path)]
    return [str(workspace / n) for n in DEFAULT_KEY_NAMES if (workspace / n).exists()]


T = TypeVar("T")


class SshTransport:
    """One reused SSH connection to a node."""

    def __init__(self, node: Node, workspace: Path, *, connect_timeout: float = 10.0) -> None:
        if not node.host:
            raise TransportError(f"ssh node {node.name} has no host")
        self.node = node
        self.workspace = workspace
        self.known_hosts = workspace / "known_hosts"
        self.connect_timeout = connect_timeout
        self._conn: Any = None

    @property
    def _target(self) -> str:
        n = self.node
        via = " via its proxy command" if n.proxy_command else ""
        return f"{n.user + '@' if n.user else ''}{n.host}:{n.port}{via}"

    def _where(self, doing: str) -> dict[str, object]:
        """The SSH boundary's fields: the node, what failed, the pinned host keys and
        the client keys (listed only when an error names them)."""
        return {"node": f"{self.node.name} ({self._target})", "doing": doing,
                "known_hosts": self.known_hosts, "keys": self._keys}

    def _keys(self) -> str:
        try:
            return ", ".join(client_keys(self.node, self.workspace)) or "none"
        except TransportError:
            return str(self.node.identity_file)

    def _errors(self, doing: str) -> AbstractContextManager[None]:
        return SSH.boundary(**self._where(doing))

    async def _connect_once(self, timeout: float) -> Any:
        import asyncssh

        n = self.node
        assert n.host is not None
        pattern = host_pattern(n.host, n.port)
        pinned = bool(pinned_entries(self.known_hosts, pattern))
        options: dict[str, Any] = {
            "port": n.port, "config": [], "agent_path": None,
            "client_keys": client_keys(n, self.workspace),
            "known_hosts": str(self.known_hosts) if pinned else None,
            "keepalive_interval": 5, "keepalive_count_max": 3,
            "connect_timeout": timeout,
            # AES-GCM first: hardware-accelerated, the fastest for bulk transfers
            "encryption_algs": PREFERRED_CIPHERS,
        }
        if n.user:
            options["username"] = n.user
        proxy = proxy_argv(n)
        if proxy is not None:
            options["proxy_command"] = proxy
        if not options["client_keys"]:
            raise TransportError(
                f"node {n.name}: no SSH key: the node has no identity_file and "
                f"{self.workspace} holds none of {', '.join(DEFAULT_KEY_NAMES)}")
        conn = await asyncssh.connect(n.host, **options)
        if not pinned:
            key = conn.get_server_host_key()
            if key is None:
                conn.close()
                raise TransportError(f"node {n.name}: the server sent no host key")
            line = f"{pattern} {key.export_public_key('openssh').decode().strip()}\n"
            self.known_hosts.parent.mkdir(parents=True, exist_ok=True)
            with self.known_hosts.open("a") as fh:
                fh.write(line)
        return conn

    async def connect(self, timeout: float) -> None:
        """Connect, retrying while the node does not answer, for up to ``timeout`` s.
        A key the server refuses is an error at once (see :meth:`reach`)."""
        try:
            await self.reach(time.monotonic() + timeout)
        except Unreachable as exc:
            raise TransportError(f"node {self.node.name} ({self._target}): cannot connect "
                                 f"over SSH: {exc.reason}") from exc.__cause__

    async def reach(self, deadline: float, *, auth_grace: float = 0.0,
                    on_retry: RetryCallback | None = None) -> None:
        """Connect before ``deadline`` (a ``time.monotonic()`` value), retrying what a
        node that is not up yet answers (refused, timed out, no route, dropped) every
        second at most, so a server that starts listening is reached within a second.

        Raises :class:`Unreachable` when the deadline passes (the last failure as its
        cause), TransportError at once for what waiting does not fix (a changed host
        key, no key), and for a refused key once it has been refused for
        ``auth_grace`` s (a booting node may take its key a little after its sshd
        starts): the :data:`SSH` table's ``retry`` says which is which. ``on_retry``
        (reason) is called before each pause."""
        if self._conn is not None:
            return
        delay = RETRY_FIRST_S
        refused_since: float | None = None
        while True:
            remaining = deadline - time.monotonic()
            try:
                self._conn = await self._connect_once(
                    max(MIN_ATTEMPT_S, min(self.connect_timeout, remaining)))
                return
            except Exception as exc:
                rule = SSH.rule_for(exc)
                if rule is None:
                    raise
                now = time.monotonic()
                if rule.retry == "grace":
                    refused_since = now if refused_since is None else refused_since
                    give_up = now - refused_since >= auth_grace or now >= deadline
                    reason = "the server does not accept the key yet"
                else:
                    refused_since = None
                    give_up = rule.retry == "no"
                    reason = why_unreachable(exc)
                if give_up:
                    raise SSH.error(rule, exc, **self._where("cannot connect over SSH")) from exc
                last = exc
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise Unreachable(reason) from last
            if on_retry is not None:
                on_retry(reason)
            await asyncio.sleep(min(delay, remaining))
            delay = min(delay * 2, RETRY_MAX_S)

    async def _lost(self, step: Awaitable[T]) -> T:
        """``step`` inside the boundary: a failure of the connection is TransportError."""
        with self._errors("connection lost"):
            return await step

    async def run(
        self,
        command: str,
        *,
        stdin: StdinSource = None,
        on_stdout: OutputSink | None = None,
        timeout: float | None = None,
    ) -> CommandResult:
        if self._conn is None:
            await self.connect(self.connect_timeout)
        try:
            proc = await self._lost(self._conn.create_process(command, encoding=None))
        except TransportError:
            self._drop()
            raise
        io = exchange(proc.stdout, proc.stderr, proc.stdin, close_stdin=proc.stdin.write_eof,
                      stdin=stdin, on_stdout=on_stdout)
        try:
            out, err = await asyncio.wait_for(self._lost(io), timeout)
            await asyncio.wait_for(self._lost(proc.wait_closed()), 30)
        except asyncio.TimeoutError:  # only the waits' own: the boundary maps the others
            proc.close()
            raise TransportError(
                f"node {self.node.name}: command timed out after {timeout} s") from None
        except TransportError:
            self._drop()
            raise
        except BaseException:  # cancellation, or a failing stdin source: end the command
            proc.close()
            raise
        status = proc.exit_status
        if status is None or status < 0:
            self._drop()
            raise TransportError(
                f"node {self.node.name} ({self._target}): connection lost while running a "
                "command (the node or its SSH server went away)")
        return CommandResult(status, out, err)

    def _drop(self) -> None:
        """Forget a broken connection; the next command reconnects."""
        if self._conn is not None:
            self._conn.abort()
            self._conn = None

    async def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            with contextlib.suppress(Exception):
                await self._conn.wait_closed()
            self._conn = None
