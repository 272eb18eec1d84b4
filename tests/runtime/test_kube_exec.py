"""The Kubernetes transport through the official client's exec stream.

No Kubernetes API server (nor kubelet, nor container runtime) can run here. What
stands in: a small HTTP + websocket server on 127.0.0.1 that answers the two calls
the transport makes, ``GET /api/v1/namespaces/NS/pods/POD`` and the ``.../exec``
websocket, speaking the channel protocol (``v4.channel.k8s.io``, or ``v5`` with its
stdin close) as the API server relays it from the kubelet: channel bytes 0-3 and the
exit status as a ``Status`` object on channel 3. Each "pod" runs its commands as a
process on this machine with a home directory of its own. The transport, the
``kubernetes`` client's stream code, the websocket client and the pod-side stdin
decoder are the real ones. Not covered here: TLS and authentication against a real
API server, the kubelet's and container runtime's behaviour (e.g. what happens to
processes when a stream closes), proxies, and the API server's message limits.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import http.server
import json
import os
import struct
import subprocess
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from skyc.errors import TransportError
from skyc.model.nodes import ClusterInfo, Node
from skyc.runtime import JobSpec, run_job
from skyc.runtime.kube import KubeTransport, exit_code, frames
from skyc.runtime.session import make_transport
from skyc.runtime.transport import upload_bytes

_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def _status(code: int) -> bytes:
    if code == 0:
        return json.dumps({"metadata": {}, "status": "Success"}).encode()
    return json.dumps({
        "metadata": {}, "status": "Failure", "reason": "NonZeroExitCode",
        "message": f"command terminated with non-zero exit code: exit code {code}",
        "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]}}).encode()


class ApiStandIn:
    """Pods (name -> home directory, phase) behind the two API calls the transport makes."""

    def __init__(self, root: Path, protocol: str) -> None:
        self.root, self.protocol = root, protocol
        self.phases: dict[str, str] = {}
        self.execs: list[list[str]] = []
        self.closed_early: list[str] = []

    def home(self, pod: str) -> Path:
        path = self.root / pod
        path.mkdir(parents=True, exist_ok=True)
        return path


class _PodApi(http.server.BaseHTTPRequestHandler):
    """The API server's pod reads and exec streams, for the pods of :attr:`api`."""

    protocol_version = "HTTP/1.1"
    api: ApiStandIn

    def log_message(self, *args: Any) -> None:
        return None

    def do_GET(self) -> None:
        url = urlparse(self.path)
        parts = url.path.strip("/").split("/")
        if len(parts) < 6 or parts[:3] != ["api", "v1", "namespaces"] or parts[4] != "pods":
            return self._json(404, {"kind": "Status", "status": "Failure", "code": 404})
        pod = parts[5]
        if pod not in self.api.phases:
            return self._json(404, {"kind": "Status", "status": "Failure", "code": 404,
                                    "reason": "NotFound", "message": f"pods {pod} not found"})
        if len(parts) == 7 and parts[6] == "exec":
            return self._exec(pod, parse_qs(url.query))
        return self._json(200, {"apiVersion": "v1", "kind": "Pod",
                                "metadata": {"name": pod, "namespace": parts[3]},
                                "status": {"phase": self.api.phases[pod]}})

    def _json(self, code: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _read_frame(self) -> tuple[int, bytes]:
        head = self.rfile.read(2)
        if len(head) < 2:
            return 8, b""
        opcode, size = head[0] & 0x0F, head[1] & 0x7F
        if size == 126:
            size = struct.unpack(">H", self.rfile.read(2))[0]
        elif size == 127:
            size = struct.unpack(">Q", self.rfile.read(8))[0]
        mask = self.rfile.read(4) if head[1] & 0x80 else b"\0\0\0\0"
        data = self.rfile.read(size)
        return opcode, bytes(b ^ mask[i % 4] for i, b in enumerate(data))

    def _send(self, lock: threading.Lock, payload: bytes, opcode: int = 2) -> None:
        size = len(payload)
        if size < 126:
            head = bytes([0x80 | opcode, size])
        elif size < 1 << 16:
            head = bytes([0x80 | opcode, 126]) + struct.pack(">H", size)
        else:
            head = bytes([0x80 | opcode, 127]) + struct.pack(">Q", size)
        with lock:
            self.connection.sendall(head + payload)

    def _upgrade(self) -> None:
        key = self.headers["Sec-WebSocket-Key"]
        accept = base64.b64encode(hashlib.sha1((key + _GUID).encode()).digest()).decode()
        self.send_response(101)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept)
        self.send_header("Sec-WebSocket-Protocol", self.api.protocol)
        self.end_headers()

    def _exec(self, pod: str, query: dict[str, list[str]]) -> None:
        self._upgrade()
        argv = query["command"]
        self.api.execs.append(argv)
        with_stdin = [v.lower() for v in query.get("stdin", [])] == ["true"]
        home = self.api.home(pod)
        proc = subprocess.Popen(
            argv, cwd=home, env={**os.environ, "HOME": str(home)},
            stdin=subprocess.PIPE if with_stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        lock = threading.Lock()

        def pipe(stream: Any, channel: int) -> None:
            while chunk := stream.read1(65536):
                self._send(lock, bytes([channel]) + chunk)

        pumps = [threading.Thread(target=pipe, args=(proc.stdout, 1)),
                 threading.Thread(target=pipe, args=(proc.stderr, 2))]
        for t in pumps:
            t.start()
        reader = threading.Thread(target=self._read_client, args=(pod, proc), daemon=True)
        reader.start()
        code = proc.wait()
        for t in pumps:
            t.join()
        try:
            self._send(lock, b"\x03" + _status(code))
            self._send(lock, b"\x03\xe8", opcode=8)
        except OSError:
            pass
        reader.join(5)
        self.close_connection = True

    def _read_client(self, pod: str, proc: subprocess.Popen[bytes]) -> None:
        """The client's frames: stdin (channel 0) to the command, a v5 close of stdin
        (channel 255), and the close of the stream, which kills a command still running."""
        while True:
            opcode, data = self._read_frame()
            if opcode == 8:  # the client closed the stream
                if proc.poll() is None:
                    self.api.closed_early.append(pod)
                    proc.kill()
                return
            with contextlib.suppress(OSError):  # the command stopped reading
                if data[:1] == b"\x00" and proc.stdin is not None:
                    proc.stdin.write(data[1:])
                    proc.stdin.flush()
                elif data[:2] == b"\xff\x00" and self.api.protocol.startswith("v5") \
                        and proc.stdin is not None:
                    proc.stdin.close()


def _handler(api: ApiStandIn) -> type[http.server.BaseHTTPRequestHandler]:
    return type("Handler", (_PodApi,), {"api": api})


@pytest.fixture(params=["v4.channel.k8s.io", "v5.channel.k8s.io"])
def api(request: pytest.FixtureRequest, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> Iterator[ApiStandIn]:
    stand_in = ApiStandIn(tmp_path / "pods", request.param)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(stand_in))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "loop",
        "clusters": [{"name": "c", "cluster": {
            "server": f"http://127.0.0.1:{server.server_address[1]}"}}],
        "contexts": [{"name": "loop", "context": {"cluster": "c", "user": "u",
                                                  "namespace": "ml"}}],
        "users": [{"name": "u", "user": {"token": "t"}}]}))
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    monkeypatch.setenv("SKYC_HOME", str(tmp_path / "skyc_home"))
    yield stand_in
    server.shutdown()
    server.server_close()


def _node(pod: str, rank: int = 0) -> Node:
    return Node(name="head" if rank == 0 else f"worker{rank}", rank=rank,
                transport="kubernetes", ip=f"10.4.0.{rank + 7}", pod=pod, namespace="ml",
                context="loop")


def _transport(api: ApiStandIn, tmp_path: Path, pod: str = "c-head") -> KubeTransport:
    api.phases.setdefault(pod, "Running")
    transport = make_transport(_node(pod), tmp_path / "ws", 5)
    assert isinstance(transport, KubeTransport)
    return transport


def test_exit_codes_stdout_and_stderr(api: ApiStandIn, tmp_path: Path) -> None:
    async def main() -> None:
        t = _transport(api, tmp_path)
        await t.connect(5)
        res = await t.run("echo out; echo err >&2; echo $HOME; exit 3")
        assert (res.exit_code, res.stderr) == (3, b"err\n")
        assert res.stdout == f"out\n{api.home('c-head')}\n".encode()
        assert (await t.run("true")).exit_code == 0
        streamed: list[bytes] = []
        res = await t.run("for i in 1 2 3; do echo $i; sleep 0.05; done",
                          on_stdout=streamed.append)
        assert b"".join(streamed) == b"1\n2\n3\n" and res.stdout == b""
        await t.close()

    asyncio.run(main())
    assert api.execs[0] == ["/bin/bash", "-c", "echo out; echo err >&2; echo $HOME; exit 3"]


def test_stdin_ends_on_every_protocol_version(api: ApiStandIn, tmp_path: Path) -> None:
    """The framed stdin ends for ``cat`` on v4 too, where the stream cannot close it."""
    blob = os.urandom(3 * 1024 * 1024 + 17)

    async def chunks() -> AsyncIterator[bytes]:
        for part in (b"abc", b"", b"def" * 100_000, b"\n"):
            yield part

    async def main() -> None:
        t = _transport(api, tmp_path)
        await upload_bytes(t, blob, "~/data/blob.bin", 0o600)
        res = await t.run("sha256sum data/blob.bin; stat -c %a data/blob.bin")
        assert res.stdout.split()[0].decode() == hashlib.sha256(blob).hexdigest()
        assert res.stdout.split()[2] == b"600"
        res = await t.run("wc -c", stdin=chunks())
        assert res.stdout.strip() == str(3 + 300_000 + 1).encode()
        res = await t.run("head -c 2; exit 4", stdin=b"x" * 5_000_000)  # stops reading
        assert (res.exit_code, res.stdout) == (4, b"xx")
        await t.close()

    asyncio.run(main())


def test_timeout_closes_the_stream(api: ApiStandIn, tmp_path: Path) -> None:
    async def main() -> None:
        t = _transport(api, tmp_path)
        with pytest.raises(TransportError, match=r"timed out after 0\.5 s"):
            await t.run("sleep 20", timeout=0.5)
        assert (await t.run("echo still")).stdout == b"still\n"
        await t.close()

    asyncio.run(main())
    for _ in range(100):
        if api.closed_early:
            break
        threading.Event().wait(0.05)
    assert api.closed_early == ["c-head"]


def test_connect_waits_for_the_pod_and_names_it(api: ApiStandIn, tmp_path: Path) -> None:
    async def main() -> None:
        pending = _transport(api, tmp_path, "c-pending")
        api.phases["c-pending"] = "Pending"
        with pytest.raises(TransportError, match=r"pod ml/c-pending .* not running after 1 s "
                                                 r"\(Pending\)"):
            await pending.connect(1)
        api.phases["c-pending"] = "Running"
        await pending.connect(1)
        failed = _transport(api, tmp_path, "c-failed")
        api.phases["c-failed"] = "Failed"
        with pytest.raises(TransportError, match="has ended"):
            await failed.connect(1)
        missing = KubeTransport(_node("c-gone"), tmp_path)
        with pytest.raises(TransportError, match="cannot read pod ml/c-gone"):
            await missing.connect(1)

    asyncio.run(main())


def test_status_messages() -> None:
    assert exit_code(_status(0).decode(), "n") == 0
    assert exit_code(_status(137).decode(), "n") == 137
    with pytest.raises(TransportError, match="without an exit status"):
        exit_code("", "n")
    with pytest.raises(TransportError, match="executable file not found"):
        exit_code(json.dumps({"status": "Failure", "message": "executable file not found"}),
                  "n")
    assert frames(b"") == [] and frames(b"ab") == [b"\0\0\0\x02ab"]


@pytest.mark.slow
def test_a_two_pod_job_sees_ranks_and_pod_ips(api: ApiStandIn, tmp_path: Path) -> None:
    """The whole runtime (agent upload, workdir sync, setup, run, exit codes) over the
    exec stream, as on every other target."""
    for pod in ("kc-head", "kc-worker1"):
        api.phases[pod] = "Running"
    cluster = ClusterInfo(name="kc", cloud="kubernetes", workspace=str(tmp_path / "ws"),
                          nodes=[_node("kc-head", 0), _node("kc-worker1", 1)])
    workdir = tmp_path / "wd"
    workdir.mkdir()
    (workdir / "hello.txt").write_text("hi from workdir\n")
    lines: list[tuple[str, str]] = []
    spec = JobSpec(setup="echo setting up", workdir=str(workdir),
                   run='echo "rank=$SKYPILOT_NODE_RANK ips=$(echo $SKYPILOT_NODE_IPS)"; '
                       'cat hello.txt; [ "$SKYPILOT_NODE_RANK" = 1 ] && exit 7; true')
    result = run_job(cluster, spec, on_line=lambda label, line: lines.append((label, line)))
    assert result.status == "FAILED" and result.exit_code == 7
    texts = [line for _, line in lines]
    assert "rank=0 ips=10.4.0.7 10.4.0.8" in texts and "rank=1 ips=10.4.0.7 10.4.0.8" in texts
    assert texts.count("hi from workdir") == 2
    assert (api.home("kc-worker1") / "sky_workdir" / "hello.txt").exists()


def test_cancelling_a_command_closes_its_stream(api: ApiStandIn, tmp_path: Path) -> None:
    async def main() -> None:
        t = _transport(api, tmp_path)
        task = asyncio.create_task(t.run("sleep 20"))
        await asyncio.sleep(0.5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert (await t.run("echo next")).stdout == b"next\n"
        await t.close()

    asyncio.run(main())
    for _ in range(100):
        if api.closed_early:
            break
        threading.Event().wait(0.05)
    assert api.closed_early == ["c-head"]
