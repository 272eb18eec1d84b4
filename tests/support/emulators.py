"""Real GCS and Azure Blob servers on 127.0.0.1, for the bucket tests: gcp-storage-emulator
(the ``test`` extra) and Azurite (npm; scripts/test.sh installs it into
``${XDG_CACHE_HOME:-~/.cache}/skyc-azurite``). Each runs on a free port, in memory,
started by a context manager that waits until it answers and stops it on leaving.

Each server's own API makes buckets and objects and reads them back (plain HTTP:
GCS's JSON API without credentials; Azure's REST API signed with the account key,
Shared Key), independently of the rclone settings skyc gives the nodes.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from email.utils import formatdate
from pathlib import Path

from tests.support.moto_server import free_port

START_TIMEOUT_S = 60.0
# Azurite's one account and its key: the emulator's own, published with it.
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = ("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/"
               "KBHBeksoGMGw==")
AZURE_API_VERSION = "2021-08-06"
# Answers straight from the server, whatever http_proxy says.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class EmulatorUnavailable(Exception):
    """Why an emulator cannot run here (not installed, or it did not start)."""


def _request(method: str, url: str, data: bytes | None = None,
             headers: Mapping[str, str] | None = None) -> tuple[int, bytes]:
    """(status, body) of one request; an HTTP error is an answer too."""
    request = urllib.request.Request(url, data=data, method=method,
                                     headers=dict(headers or {}))
    try:
        with _DIRECT.open(request, timeout=30) as answer:
            return int(answer.status), bytes(answer.read())
    except urllib.error.HTTPError as err:
        return int(err.code), bytes(err.read())


def _expect(status: int, body: bytes, what: str, ok: tuple[int, ...] = (200, 201)) -> None:
    if status not in ok:
        raise AssertionError(f"{what}: HTTP {status}: {body[:500]!r}")


@contextlib.contextmanager
def _serving(argv: list[str], log: Path, probe: str, cwd: Path,
             env: Mapping[str, str] | None = None) -> Iterator[subprocess.Popen[bytes]]:
    """Run a server until the ``with`` block ends, once ``probe`` answers (any HTTP
    status); EmulatorUnavailable with its log's end when it does not."""
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=cwd,
                                env={**os.environ, **(env or {})}, start_new_session=True)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                raise EmulatorUnavailable(f"{Path(argv[0]).name} exited "
                                          f"{proc.returncode}: {log.read_text()[-1500:]}")
            try:
                _request("GET", probe)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise EmulatorUnavailable(
                        f"{Path(argv[0]).name} did not answer within "
                        f"{START_TIMEOUT_S:.0f} s: {log.read_text()[-1500:]}") from None
                time.sleep(0.1)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@dataclass
class GcsEmulator:
    """gcp-storage-emulator at ``url`` (what STORAGE_EMULATOR_HOST holds)."""

    url: str

    def create_bucket(self, name: str) -> None:
        status, body = _request("POST", f"{self.url}/storage/v1/b?project=skyc-test",
                                json.dumps({"name": name}).encode(),
                                {"Content-Type": "application/json"})
        _expect(status, body, f"creating bucket {name}")

    def put(self, bucket: str, name: str, data: bytes) -> None:
        query = urllib.parse.urlencode({"uploadType": "media", "name": name})
        status, body = _request("POST", f"{self.url}/upload/storage/v1/b/{bucket}/o?{query}",
                                data, {"Content-Type": "application/octet-stream"})
        _expect(status, body, f"uploading gs://{bucket}/{name}")

    def get(self, bucket: str, name: str) -> bytes | None:
        """The object's bytes; None when there is no such object."""
        quoted = urllib.parse.quote(name, safe="")
        status, body = _request(
            "GET", f"{self.url}/download/storage/v1/b/{bucket}/o/{quoted}?alt=media")
        if status == 404:
            return None
        _expect(status, body, f"reading gs://{bucket}/{name}", ok=(200,))
        return body


@contextlib.contextmanager
def start_gcs(workdir: Path) -> Iterator[GcsEmulator]:
    """gcp-storage-emulator on a free port of 127.0.0.1 (its log in ``workdir``)."""
    try:
        import gcp_storage_emulator  # noqa: F401
    except ImportError:
        raise EmulatorUnavailable("gcp-storage-emulator is not installed (the test "
                                  "extra: requirements/test.lock)") from None
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    argv = [sys.executable, "-m", "gcp_storage_emulator", "start", "--host", "127.0.0.1",
            "--port", str(port), "--in-memory"]
    with _serving(argv, workdir / "gcs-emulator.log", f"{url}/", workdir):
        yield GcsEmulator(url)


@dataclass
class Azurite:
    """Azurite's blob service at ``endpoint`` (``http://127.0.0.1:PORT/devstoreaccount1``)."""

    endpoint: str
    account: str = AZURITE_ACCOUNT
    key: str = AZURITE_KEY

    @property
    def connection_string(self) -> str:
        """As Azure's tools write it (AZURE_STORAGE_CONNECTION_STRING)."""
        return (f"DefaultEndpointsProtocol=http;AccountName={self.account};"
                f"AccountKey={self.key};BlobEndpoint={self.endpoint};")

    def url(self, container: str, path: str = "") -> str:
        """A container's URL as a task names it (Azure's own host; the endpoint in the
        connection string is what leads to Azurite)."""
        base = f"https://{self.account}.blob.core.windows.net/{container}"
        return f"{base}/{path}" if path else base

    def _call(self, method: str, path: str, query: Mapping[str, str] | None = None,
              data: bytes = b"", headers: Mapping[str, str] | None = None
              ) -> tuple[int, bytes]:
        """One request signed with the account key (Shared Key)."""
        query = dict(query or {})
        sent = {"x-ms-date": formatdate(usegmt=True), "x-ms-version": AZURE_API_VERSION,
                **(headers or {})}
        if method == "PUT":  # else urllib sends a form's type, which is signed too
            sent["Content-Type"] = "application/octet-stream"
        full = urllib.parse.urlsplit(self.endpoint).path + path
        signature = self._sign(method, full, query, sent, len(data))
        sent["Authorization"] = f"SharedKey {self.account}:{signature}"
        if data:
            sent["Content-Length"] = str(len(data))
        url = f"{self.endpoint}{urllib.parse.quote(path)}"
        if query:
            url += "?" + urllib.parse.urlencode(query)
        return _request(method, url, data if method == "PUT" else None, sent)

    def _sign(self, method: str, path: str, query: Mapping[str, str],
              headers: Mapping[str, str], length: int) -> str:
        lower = {k.lower(): v for k, v in headers.items()}
        fields = [method, "", "", str(length) if length else "", "",
                  lower.get("content-type", ""), "", "", "", "", "", ""]
        ms = "".join(f"{k}:{v}\n" for k, v in sorted(lower.items()) if k.startswith("x-ms-"))
        resource = f"/{self.account}{path}" + "".join(
            f"\n{k.lower()}:{v}" for k, v in sorted(query.items()))
        text = "\n".join(fields) + "\n" + ms + resource
        digest = hmac.new(base64.b64decode(self.key), text.encode(), hashlib.sha256)
        return base64.b64encode(digest.digest()).decode()

    def create_container(self, name: str) -> None:
        status, body = self._call("PUT", f"/{name}", {"restype": "container"})
        _expect(status, body, f"creating container {name}")

    def put(self, container: str, name: str, data: bytes) -> None:
        status, body = self._call("PUT", f"/{container}/{name}", data=data,
                                  headers={"x-ms-blob-type": "BlockBlob"})
        _expect(status, body, f"uploading {container}/{name}")

    def get(self, container: str, name: str) -> bytes | None:
        """The blob's bytes; None when there is no such blob."""
        status, body = self._call("GET", f"/{container}/{name}")
        if status == 404:
            return None
        _expect(status, body, f"reading {container}/{name}", ok=(200,))
        return body


def azurite_program() -> str | None:
    """Azurite's blob server: on PATH, else where scripts/test.sh installs it."""
    found = shutil.which("azurite-blob")
    if found:
        return found
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    installed = cache / "skyc-azurite" / "node_modules" / ".bin" / "azurite-blob"
    return str(installed) if installed.is_file() else None


@contextlib.contextmanager
def start_azurite(workdir: Path) -> Iterator[Azurite]:
    """Azurite's blob service on a free port of 127.0.0.1, in memory, without telemetry
    (its log in ``workdir``)."""
    program = azurite_program()
    if program is None:
        raise EmulatorUnavailable("Azurite is not installed (scripts/test.sh installs it: "
                                  "npm install --prefix ~/.cache/skyc-azurite azurite)")
    if shutil.which("node") is None:
        raise EmulatorUnavailable("node is not installed (Debian package nodejs): Azurite "
                                  "runs on it")
    port = free_port()
    argv = [program, "--blobHost", "127.0.0.1", "--blobPort", str(port),
            "--inMemoryPersistence", "--disableTelemetry"]
    endpoint = f"http://127.0.0.1:{port}/{AZURITE_ACCOUNT}"
    with _serving(argv, workdir / "azurite.log", f"{endpoint}?comp=list", workdir):
        yield Azurite(endpoint)
