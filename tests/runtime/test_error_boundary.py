"""Each transport maps the exceptions of the library that reaches its nodes at one
boundary, by one table: every type in the table comes out as the error its row names,
with the original as its cause; every exception class asyncssh defines is mapped (a
new release's new class fails here until it is); and what the table does not name (a
``ValueError`` of skyc's own) passes through untouched."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import subprocess
import sys
import time
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

from skyc.errors import SkycError, TransportError
from skyc.model.nodes import Node
from skyc.runtime.kube import KUBE, KubeTransport
from skyc.runtime.ssh import SSH, SshTransport, Unreachable
from skyc.runtime.transport import LOCAL, LocalTransport
from skyc.runtime.transport_errors import ErrorTable, loaded_class

# The libraries the tables name, loaded so that their classes can be raised here.
LIBRARIES = ("asyncssh", "kubernetes.client.exceptions", "kubernetes.config",
             "urllib3.exceptions", "websocket", "yaml", "binascii", "subprocess")


@pytest.fixture(autouse=True, scope="module")
def _libraries() -> None:
    for name in LIBRARIES:
        pytest.importorskip(name)


def instance(cls: type[BaseException]) -> BaseException:
    """An exception of class ``cls``, whatever its constructor takes."""
    try:
        return cls("boom")
    except TypeError:
        exc = cls.__new__(cls)
        exc.args = ("boom",)
        return exc


def _node(transport: str, tmp_path: Path) -> Node:
    return Node(name="worker1", rank=1, transport=transport, ip="10.0.0.2",  # type: ignore[arg-type]
                host="10.0.0.2", node_dir=str(tmp_path / "node"), pod="p1", namespace="ml")


def boundaries(tmp_path: Path) -> dict[str, tuple[ErrorTable, AbstractContextManager[None]]]:
    """Each transport's table, with its boundary as the transport itself opens it."""
    local = LocalTransport(_node("local", tmp_path))
    ssh = SshTransport(_node("ssh", tmp_path), tmp_path)
    kube = KubeTransport(_node("kubernetes", tmp_path), tmp_path)
    return {"local": (LOCAL, local._errors("cannot start bash")),
            "ssh": (SSH, ssh._errors("connection lost")),
            "kube": (KUBE, kube._errors("exec stream failed"))}


def raised_through(boundary: AbstractContextManager[None], exc: BaseException) -> BaseException:
    with pytest.raises(BaseException) as caught, boundary:
        raise exc
    return caught.value


@pytest.mark.parametrize("layer", ["local", "ssh", "kube"])
def test_every_type_in_the_table_comes_out_as_its_error(layer: str, tmp_path: Path) -> None:
    table = boundaries(tmp_path)[layer][0]
    for name, rule in table.rules.items():
        cls = loaded_class(name)
        assert cls is not None, f"{layer}: {name} names no class"
        exc = instance(cls)
        error = raised_through(boundaries(tmp_path)[layer][1], exc)
        assert type(error) is rule.error and isinstance(error, TransportError), (name, error)
        assert error.__cause__ is exc, name
        assert "worker1" in str(error), (name, str(error))


def _library_exceptions(module: str) -> list[type[BaseException]]:
    lib = importlib.import_module(module)
    return sorted((v for n, v in vars(lib).items()
                   if not n.startswith("_") and inspect.isclass(v)
                   and issubclass(v, BaseException) and v.__module__.startswith(module)),
                  key=lambda c: c.__name__)


def test_every_exception_asyncssh_defines_is_mapped(tmp_path: Path) -> None:
    classes = _library_exceptions("asyncssh")
    assert len(classes) > 20  # the module's exceptions were found
    unmapped = [c.__name__ for c in classes if SSH.rule_for(instance(c)) is None]
    assert unmapped == [], f"asyncssh exceptions the SSH table does not map: {unmapped}"
    transport = SshTransport(_node("ssh", tmp_path), tmp_path)
    for cls in classes:
        exc = instance(cls)
        error = raised_through(transport._errors("connection lost"), exc)
        assert isinstance(error, TransportError) and error.__cause__ is exc, cls


def test_the_most_specific_row_wins() -> None:
    import asyncssh

    refused = SSH.rule_for(asyncssh.PermissionDenied("no"))
    lost = SSH.rule_for(asyncssh.ConnectionLost("gone"))
    assert refused is SSH.rules["asyncssh.PermissionDenied"]
    assert lost is SSH.rules["asyncssh.Error"]
    # asyncssh's TimeoutError is also the builtin's: asyncssh's own row comes first
    assert SSH.rule_for(instance(asyncssh.TimeoutError)) is SSH.rules["asyncssh.Error"]
    assert SSH.rule_for(ConnectionRefusedError()) is SSH.rules["builtins.OSError"]


@pytest.mark.parametrize("layer", ["local", "ssh", "kube"])
def test_what_the_table_does_not_name_passes_through(layer: str, tmp_path: Path) -> None:
    ours = ValueError("a bug of skyc's own")
    assert raised_through(boundaries(tmp_path)[layer][1], ours) is ours
    already = TransportError("node worker1: said by skyc")
    assert raised_through(boundaries(tmp_path)[layer][1], already) is already
    stop = KeyboardInterrupt()
    assert raised_through(boundaries(tmp_path)[layer][1], stop) is stop


def test_the_tables_import_no_library() -> None:
    code = ("import sys\n"
            "import skyc.runtime.ssh as s, skyc.runtime.kube as k, skyc.runtime.transport as t\n"
            "for table in (s.SSH, k.KUBE, t.LOCAL):\n"
            "    assert table.rule_for(ConnectionRefusedError()) is not None\n"
            "    assert table.rule_for(ValueError()) is None\n"
            "heavy = [m for m in ('asyncssh', 'kubernetes', 'urllib3', 'websocket')"
            " if m in sys.modules]\n"
            "assert heavy == [], heavy\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]


# -- at the points where each transport calls its library --------------------------------


class _Conn:
    """An SSH connection whose every command fails as asyncssh fails it."""

    def __init__(self, exc: BaseException) -> None:
        self.exc, self.aborted = exc, False

    async def create_process(self, *args: Any, **kwargs: Any) -> Any:
        raise self.exc

    def abort(self) -> None:
        self.aborted = True


def test_ssh_run_maps_a_lost_connection_and_drops_it(tmp_path: Path) -> None:
    import asyncssh

    transport = SshTransport(_node("ssh", tmp_path), tmp_path)
    conn = _Conn(asyncssh.ConnectionLost("Connection lost"))
    transport._conn = conn
    with pytest.raises(TransportError, match=r"worker1 \(10\.0\.0\.2:22\): connection lost: "
                                             "Connection lost") as caught:
        asyncio.run(transport.run("true"))
    assert caught.value.__cause__ is conn.exc
    assert conn.aborted and transport._conn is None  # the next command reconnects


def test_ssh_connect_refuses_a_changed_key_at_once_and_retries_a_refusal(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncssh

    transport = SshTransport(_node("ssh", tmp_path), tmp_path)
    failure: list[BaseException] = []

    async def connect_once(timeout: float) -> Any:
        raise failure[0]

    monkeypatch.setattr(transport, "_connect_once", connect_once)
    failure[:] = [asyncssh.HostKeyNotVerifiable("Host key is not trusted")]
    started = time.monotonic()
    with pytest.raises(TransportError, match="host key does not match") as caught:
        asyncio.run(transport.connect(30))
    assert time.monotonic() - started < 5 and caught.value.__cause__ is failure[0]
    assert caught.value.hint and "intercepting" in caught.value.hint

    failure[:] = [ConnectionRefusedError(111, "Connection refused")]
    with pytest.raises(TransportError, match="cannot connect over SSH: connection refused"
                       ) as caught:
        asyncio.run(transport.connect(0.5))
    assert caught.value.__cause__ is failure[0]
    with pytest.raises(Unreachable) as gone:
        asyncio.run(transport.reach(time.monotonic() + 0.3))
    assert gone.value.__cause__ is failure[0]

    failure[:] = [ValueError("a bug of skyc's own")]
    with pytest.raises(ValueError, match="own"):
        asyncio.run(transport.connect(30))


class _Pods:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def read_namespaced_pod(self, *args: Any, **kwargs: Any) -> Any:
        raise self.exc


def test_kube_connect_maps_the_api_and_stops_on_a_final_answer(tmp_path: Path) -> None:
    from kubernetes.client.exceptions import ApiException

    transport = KubeTransport(_node("kubernetes", tmp_path), tmp_path)
    gone = ApiException(status=404, reason="Not Found")
    transport._api = _Pods(gone)
    started = time.monotonic()
    with pytest.raises(TransportError, match=r"worker1: cannot read pod ml/p1 .*: Not Found"
                       ) as caught:
        asyncio.run(transport.connect(30))
    assert time.monotonic() - started < 5 and caught.value.__cause__ is gone
    transport._api = _Pods(ValueError("a bug of skyc's own"))
    with pytest.raises(ValueError, match="own"):
        asyncio.run(transport.connect(30))


def test_kube_kubeconfig_errors_name_the_node_and_say_where_to_look(tmp_path: Path) -> None:
    bad = tmp_path / "kubeconfig"
    bad.write_text("::: [")
    transport = KubeTransport(_node("kubernetes", tmp_path), tmp_path, kubeconfig=str(bad))
    with pytest.raises(TransportError, match="node worker1: kubeconfig: ") as caught:
        transport._client()
    assert caught.value.hint == "check KUBECONFIG / ~/.kube/config"
    assert caught.value.__cause__ is not None


def test_local_connect_maps_a_directory_it_cannot_make(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    node = _node("local", tmp_path).model_copy(update={"node_dir": str(tmp_path / "file" / "n")})
    with pytest.raises(TransportError, match="node worker1: cannot create its directory"
                       ) as caught:
        asyncio.run(LocalTransport(node).connect(1))
    assert isinstance(caught.value.__cause__, OSError)
    assert isinstance(caught.value, SkycError)
