"""Kubernetes transport: commands in a pod through the API server's exec stream.

Why exec streams and not an sshd inside the pod behind a port-forward: the exec
stream needs nothing in the image but bash and python3 (which the agent needs
anyway), no key to place in the pod, no daemon to start as root, and no local
listener; it is what ``kubectl exec`` uses, authorised by the same RBAC
(``pods/exec``) as the rest of the cluster's access, and works on any image the
task names. A port-forward is itself a stream through the same API server, so
sshd would add a second protocol on top of it without removing any hop.

The stream is the official ``kubernetes`` client's (imported lazily): a
websocket whose messages carry a channel byte (0 stdin, 1 stdout, 2 stderr,
3 the exit status as a ``Status`` object). The v4 channel protocol cannot close
stdin alone (v5, Kubernetes 1.30+, can), so stdin is framed here: each chunk
goes as a 4-byte length and its bytes, a zero length ends it, and a small
decoder in the pod (python3) turns the frames back into a stream that ends, so
``cat > file`` and ``tar x`` see their end of file on every server version.

Each command runs in a thread of its own that pumps the socket (the client is
synchronous); output is handed to the event loop as it arrives. A timeout or a
cancellation closes the stream; the agent's own job control ends job processes
(closing an exec stream does not kill what it started on every runtime).

The client is called only inside the transport's error boundary, :data:`KUBE`: its
table maps the client's API errors, the HTTP and websocket libraries' errors, a bad
kubeconfig and the OS's socket errors to a TransportError naming the node.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import os
import queue
import shlex
import struct
import threading
import time
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from skyc.errors import TransportError
from skyc.model.nodes import Node
from skyc.runtime.transport import CommandResult, OutputSink, StdinSource
from skyc.runtime.transport_errors import ErrorTable, Rule

CONTAINER = "node"
FRAME = 1 << 20
STDIN, STDOUT, STDERR, ERROR = 0, 1, 2, 3

# Runs in the pod: frames on stdin -> a plain stream on stdout that ends.
DECODER = (
    "import sys,struct\n"
    "i=sys.stdin.buffer;o=sys.stdout.buffer\n"
    "try:\n"
    " while True:\n"
    "  h=i.read(4)\n"
    "  if len(h)<4:break\n"
    "  n=struct.unpack('>I',h)[0]\n"
    "  if n==0:break\n"
    "  o.write(i.read(n));o.flush()\n"
    "except BrokenPipeError:pass\n"
)


def frames(chunk: bytes) -> list[bytes]:
    """A chunk of stdin as length-prefixed frames (empty chunks send nothing)."""
    return [struct.pack(">I", len(part)) + part
            for part in (chunk[i:i + FRAME] for i in range(0, len(chunk), FRAME))]


END = struct.pack(">I", 0)
PumpEnd = tuple[bytes, bytes, str]  # what a command's pump ends with: stdout, stderr, status


def remote_command(command: str, *, with_stdin: bool) -> list[str]:
    """The argv the pod runs: the command under bash, fed through the decoder."""
    if not with_stdin:
        return ["/bin/bash", "-c", command]
    return ["/bin/bash", "-c", f"python3 -c {shlex.quote(DECODER)} | {{ {command}\n}}"]


def exit_code(status_text: str, node: str) -> int:
    """The exit code in the stream's status message (channel 3)."""
    if not status_text.strip():
        raise TransportError(f"node {node}: the exec stream ended without an exit status "
                             "(the pod or the API server went away)")
    try:
        status = json.loads(status_text)
    except ValueError:
        raise TransportError(f"node {node}: unreadable exec status: {status_text[:200]}") from None
    if status.get("status") == "Success":
        return 0
    for cause in (status.get("details") or {}).get("causes") or []:
        if cause.get("reason") == "ExitCode":
            return int(cause.get("message", "1"))
    raise TransportError(f"node {node}: exec failed: {status.get('message') or status_text}")


def _reason(exc: BaseException) -> str:
    """The API's reason (``Not Found``) where it gives one, else the exception's text."""
    return str(getattr(exc, "reason", None) or exc)


_FAILED = "node {node}: {doing}: {reason}"
_KUBECONFIG_HINT = "check KUBECONFIG / ~/.kube/config"
KUBE = ErrorTable("kube", {
    "kubernetes.client.exceptions.ApiException": Rule(TransportError, _FAILED),
    "urllib3.exceptions.HTTPError": Rule(TransportError, _FAILED),   # the API's HTTP
    "websocket.WebSocketException": Rule(TransportError, _FAILED),   # the exec stream
    "kubernetes.config.ConfigException": Rule(TransportError, _FAILED, hint=_KUBECONFIG_HINT),
    # a kubeconfig that is not YAML, or whose certificate data is not base64
    "yaml.YAMLError": Rule(TransportError, _FAILED, hint=_KUBECONFIG_HINT),
    "binascii.Error": Rule(TransportError, _FAILED, hint=_KUBECONFIG_HINT),
    "builtins.OSError": Rule(TransportError, _FAILED),
}, reason=_reason)
# What reading a pod answers that waiting does not change: unauthorised, forbidden, gone.
_FINAL_STATUS = (401, 403, 404)


class KubeTransport:
    """Commands in one pod (``node.pod`` in ``node.namespace`` of ``node.context``)."""

    def __init__(self, node: Node, workspace: Path, *, connect_timeout: float = 10.0,
                 kubeconfig: str | None = None) -> None:
        if not node.pod:
            raise TransportError(f"kubernetes node {node.name} has no pod")
        self.node = node
        self.workspace = workspace
        self.connect_timeout = connect_timeout
        self.kubeconfig = kubeconfig
        self._api: Any = None

    @property
    def _where(self) -> str:
        n = self.node
        return f"pod {n.namespace or 'default'}/{n.pod} (context {n.context or 'current'})"

    def _errors(self, doing: str, hint: str | None = None) -> AbstractContextManager[None]:
        return KUBE.boundary(node=self.node.name, doing=doing, hint=hint)

    def _client(self) -> Any:
        try:
            config: Any = importlib.import_module("kubernetes.config")
            client: Any = importlib.import_module("kubernetes.client")
        except ImportError:
            raise TransportError("reaching pods needs the 'kubernetes' package",
                                 hint="pip install 'skyc[kubernetes]'") from None
        # KUBECONFIG as it is now (the client reads it once, when first imported).
        config_file = self.kubeconfig or os.environ.get("KUBECONFIG") or None
        with self._errors("kubeconfig", hint=_KUBECONFIG_HINT):
            api_client = config.new_client_from_config(config_file=config_file,
                                                       context=self.node.context)
        return client.CoreV1Api(api_client)

    def _phase(self) -> str:
        pod = self._api.read_namespaced_pod(self.node.pod, self.node.namespace or "default",
                                            _request_timeout=10)
        return str(pod.status.phase or "Unknown")

    async def connect(self, timeout: float) -> None:
        """Wait (up to ``timeout`` s) until the pod runs."""
        if self._api is None:
            self._api = await asyncio.to_thread(self._client)
        deadline = time.monotonic() + timeout
        while True:
            try:
                with self._errors(f"cannot read {self._where}"):
                    phase = await asyncio.to_thread(self._phase)
            except TransportError as exc:
                status = getattr(exc.__cause__, "status", None)
                if status in _FINAL_STATUS or time.monotonic() > deadline:
                    raise
                phase = "Unreachable"
            if phase == "Running":
                return
            if phase in ("Succeeded", "Failed"):
                raise TransportError(f"node {self.node.name}: {self._where} has ended ({phase})")
            if time.monotonic() > deadline:
                raise TransportError(f"node {self.node.name}: {self._where} is not running "
                                     f"after {timeout:g} s ({phase})")
            await asyncio.sleep(0.5)

    def _open(self, argv: list[str], with_stdin: bool) -> Any:
        stream: Any = importlib.import_module("kubernetes.stream")
        return stream.stream(
            self._api.connect_get_namespaced_pod_exec, self.node.pod,
            self.node.namespace or "default", command=argv, container=CONTAINER,
            stdin=with_stdin, stdout=True, stderr=True, tty=False,
            _preload_content=False, binary=True)

    async def run(
        self,
        command: str,
        *,
        stdin: StdinSource = None,
        on_stdout: OutputSink | None = None,
        timeout: float | None = None,
    ) -> CommandResult:
        if self._api is None:
            await self.connect(self.connect_timeout)
        with_stdin = stdin is not None
        out: list[bytes] = []
        inbox: queue.Queue[bytes | None] = queue.Queue(maxsize=16)
        stop = threading.Event()
        done = self._start_pump(remote_command(command, with_stdin=with_stdin), with_stdin,
                                inbox, stop, on_stdout if on_stdout is not None else out.append)
        feeder = asyncio.create_task(_feed(inbox, stdin, stop)) if with_stdin else None
        try:
            _, err, status = await self._wait(done, stop, timeout)
        finally:
            if feeder is not None:
                feeder.cancel()
                with contextlib.suppress(BaseException):
                    await feeder
        await asyncio.sleep(0)  # output handed over before the end runs first
        return CommandResult(exit_code(status, self.node.name), b"".join(out), err)

    def _start_pump(self, argv: list[str], with_stdin: bool, inbox: queue.Queue[bytes | None],
                    stop: threading.Event, emit: OutputSink) -> asyncio.Future[PumpEnd]:
        """Open the exec stream and pump it in a thread of its own: its output goes to
        ``emit`` on the event loop, its end (stdout, stderr, status) or its failure to the
        future returned."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[PumpEnd] = loop.create_future()

        def post(fn: Any, *args: Any) -> None:
            with contextlib.suppress(RuntimeError):  # the loop is gone (the run was ended)
                loop.call_soon_threadsafe(fn, *args)

        def pump() -> None:
            err: list[bytes] = []
            try:
                with self._errors("exec stream failed"):
                    ws = self._open(argv, with_stdin)
                    try:
                        status = _pump(ws, inbox, stop, err, lambda d: post(emit, d))
                    finally:
                        ws.close()
            except BaseException as exc:  # handed to the loop, raised there
                post(_fail, done, exc)
                return
            post(_finish, done, (b"", b"".join(err), status))

        threading.Thread(target=pump, name=f"kube-exec-{self.node.name}", daemon=True).start()
        return done

    async def _wait(self, done: asyncio.Future[PumpEnd], stop: threading.Event,
                    timeout: float | None) -> PumpEnd:
        """The pump's end, within ``timeout`` s; the pump is stopped when it is not
        waited for to its end (a timeout, a cancellation, a failing stdin source)."""
        try:
            result = await asyncio.wait_for(asyncio.shield(done), timeout)
        except asyncio.TimeoutError:
            _abandon(done, stop)
            raise TransportError(
                f"node {self.node.name}: command timed out after {timeout} s") from None
        except BaseException:  # cancelled, or the stdin source failed
            _abandon(done, stop)
            raise
        return result

    async def close(self) -> None:
        if self._api is not None:
            with contextlib.suppress(Exception):
                self._api.api_client.close()
            self._api = None


def _abandon(done: asyncio.Future[Any], stop: threading.Event) -> None:
    """Stop the pump; what it reports after that is read and dropped."""
    stop.set()
    done.add_done_callback(lambda f: None if f.cancelled() else f.exception())


def _fail(done: asyncio.Future[Any], exc: BaseException) -> None:
    if not done.done():
        done.set_exception(exc)


def _finish(done: asyncio.Future[Any], value: Any) -> None:
    if not done.done():
        done.set_result(value)


async def _feed(inbox: queue.Queue[bytes | None], stdin: StdinSource,
                stop: threading.Event) -> None:
    """Frames of ``stdin`` into the pump's queue, then the end frame."""
    async def put(item: bytes) -> None:
        while not stop.is_set():
            try:
                inbox.put_nowait(item)
                return
            except queue.Full:
                await asyncio.sleep(0.005)

    if isinstance(stdin, bytes):
        for frame in frames(stdin):
            await put(frame)
    elif stdin is not None:
        async for chunk in stdin:
            for frame in frames(chunk):
                await put(frame)
    await put(END)


def _pump(ws: Any, inbox: queue.Queue[bytes | None], stop: threading.Event,
          err: list[bytes], emit: Any) -> str:
    """Move bytes until the stream closes; the status text (channel 3)."""
    status: list[bytes] = []
    ended = False
    while ws.is_open() and not stop.is_set():
        ended = ended or _send_stdin(ws, inbox)
        ws.update(timeout=0.02)
        _take_output(ws, emit, err, status)
    if stop.is_set():
        raise TransportError("exec stream stopped")
    _take_output(ws, emit, err, status)
    return b"".join(status).decode(errors="replace")


def _send_stdin(ws: Any, inbox: queue.Queue[bytes | None]) -> bool:
    """The frames queued so far, written to the stream; True once the end frame went."""
    while True:
        try:
            item = inbox.get_nowait()
        except queue.Empty:
            return False
        if item is None:
            continue
        ws.write_channel(STDIN, item)
        if item == END:
            ws.close_channel(STDIN)  # v5 only; the end frame does it on v4
            return True


def _take_output(ws: Any, emit: Any, err: list[bytes], status: list[bytes]) -> None:
    """What the stream holds now: stdout to ``emit``, stderr and the status kept."""
    data = ws.read_channel(STDOUT)
    if data:
        emit(bytes(data))
    for channel, target in ((STDERR, err), (ERROR, status)):
        data = ws.read_channel(channel)
        if data:
            target.append(bytes(data))
