"""``service: tls: {keyfile, certfile}``: an HTTPS endpoint, with a self-signed
certificate for 127.0.0.1 made here (the ``cryptography`` package) and clients that
trust it. Missing or unloadable files are refused before anything is created,
naming the field; the load balancer serves HTTPS in this process (answers and
streams) and as a real service's controller, whose ``serve update`` may change the
certificate but not turn HTTPS off."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import ssl
import time
import urllib.error
import urllib.request
from pathlib import Path

import aiohttp
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from skyc.errors import TaskSpecError
from skyc.serve import prepare
from skyc.serve.balancer import Balancer, Upstream
from skyc.serve.policies import RoundRobin
from skyc.serve.spec import Tls, tls_context
from tests.e2e.conftest import Skyc
from tests.serve.conftest import closed_port, ready, service_yaml, status, wait_status


def make_cert(where: Path, name: str) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key: (keyfile, certfile)."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    keyfile, certfile = where / f"{name}.key", where / f"{name}.crt"
    keyfile.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                          serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    certfile.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return keyfile, certfile


def trusting(certfile: Path) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(certfile))


def _tls_yaml(keyfile: str, certfile: str, extra: str = "") -> str:
    return service_yaml(f"  readiness_probe: /health\n  replicas: 1\n  tls:\n"
                        f"    keyfile: {keyfile}\n    certfile: {certfile}\n", extra=extra)


def test_missing_or_unloadable_files_are_refused_naming_the_field(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)   # relative paths are taken from here
    make_cert(tmp_path, "a")
    make_cert(tmp_path, "b")
    task = tmp_path / "svc.yaml"
    task.write_text(_tls_yaml("nokey.pem", "a.crt"))
    with pytest.raises(TaskSpecError) as caught:
        prepare(task, None, {})
    assert f"svc.yaml: service.tls.keyfile: no such file: {tmp_path}/nokey.pem" \
        in caught.value.message
    task.write_text(_tls_yaml("a.key", "~/nocert.pem"))
    with pytest.raises(TaskSpecError, match=r"service\.tls\.certfile: no such file"):
        prepare(task, None, {})
    task.write_text(_tls_yaml("a.key", "b.crt"))   # a key and another one's certificate
    with pytest.raises(TaskSpecError) as caught:
        prepare(task, None, {})
    assert "svc.yaml: service.tls: " in caught.value.message
    assert "do not load as a PEM certificate and its unencrypted private key" \
        in caught.value.message
    task.write_text(_tls_yaml("a.key", "a.crt"))
    config = prepare(task, None, {}).config
    assert config.tls == Tls(str(tmp_path / "a.key"), str(tmp_path / "a.crt"))


async def _through(url: str, certfile: Path) -> tuple[str, list[float], str]:
    """An answer and a stream's arrival times over HTTPS; what plain HTTP gets."""
    async with aiohttp.ClientSession() as client:
        async with client.get(f"https://{url}/", ssl=trusting(certfile)) as answer:
            text = await answer.text()
        arrivals = []
        async with client.get(f"https://{url}/stream?n=4&gap=0.3",
                              ssl=trusting(certfile)) as answer:
            async for line in answer.content:
                if line.startswith(b"data: "):
                    arrivals.append(time.monotonic())
        try:
            async with client.get(f"http://{url}/") as answer:
                plain = f"answered {answer.status}"
        except aiohttp.ClientError as exc:
            plain = type(exc).__name__
    return text, arrivals, plain


def test_the_balancer_serves_https_and_streams_through_it(
        tmp_path: Path, servers: list[str]) -> None:
    keyfile, certfile = make_cert(tmp_path, "lb")

    async def run() -> tuple[str, list[float], str]:
        balancer = Balancer(RoundRobin(), lambda r, why: None, "test")
        balancer.set_upstreams([Upstream(1, servers[0])])
        port = closed_port()
        await balancer.start("127.0.0.1", port, tls_context(Tls(str(keyfile), str(certfile))))
        try:
            return await _through(f"127.0.0.1:{port}", certfile)
        finally:
            await balancer.stop()

    text, arrivals, plain = asyncio.run(run())
    assert text == "replica ?\n"
    assert len(arrivals) == 4 and arrivals[-1] - arrivals[0] > 0.7, arrivals
    assert plain != "answered 200"   # no answer over plain HTTP


def test_a_service_with_tls_has_an_https_endpoint(runner: Skyc) -> None:
    make_cert(runner.cwd, "one")
    make_cert(runner.cwd, "two")
    runner.write("missing.yaml", _tls_yaml("one.key", "gone.crt"))
    result = runner("serve", "up", "missing.yaml", "-n", "tls", "-y")
    assert result.returncode != 0 and "service.tls.certfile: no such file" in result.stderr
    assert not (runner.home / "serve" / "tls").exists() and runner.clusters() == []

    runner.write("one.yaml", _tls_yaml("one.key", "one.crt"))
    url = runner.ok("serve", "up", "one.yaml", "-n", "tls", "-y").stdout.split()[1]
    assert url.startswith("https://127.0.0.1:")
    wait_status(runner, "tls", lambda d: len(ready(d)) == 1)
    assert runner.ok("serve", "status", "--endpoint", "tls").stdout.strip() == url
    assert status(runner, "tls")["tls"] is True
    answer = urllib.request.urlopen(url + "/", timeout=10, context=trusting(runner.cwd / "one.crt"))
    assert answer.read() == b"replica 1\n"
    with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):
        urllib.request.urlopen(url + "/", timeout=10, context=ssl.create_default_context())

    # An update may bring another certificate: new connections get it.
    runner.write("two.yaml", _tls_yaml("two.key", "two.crt"))
    runner.ok("serve", "update", "tls", "two.yaml", "-y")
    wait_status(runner, "tls", lambda d: d["update_mode"] is None and d["version"] == 2)
    answer = urllib.request.urlopen(url + "/", timeout=10, context=trusting(runner.cwd / "two.crt"))
    assert answer.read() == b"replica 2\n"
    runner.write("plain.yaml", service_yaml("  readiness_probe: /health\n  replicas: 1\n"))
    result = runner("serve", "update", "tls", "plain.yaml", "-y")
    assert result.returncode != 0 and "service.tls: an update cannot turn HTTPS" in result.stderr
    assert status(runner, "tls")["version"] == 2


def test_an_encrypted_key_is_refused_not_prompted_for(tmp_path: Path) -> None:
    keyfile, certfile = make_cert(tmp_path, "c")
    key = serialization.load_pem_private_key(keyfile.read_bytes(), None)
    keyfile.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                          serialization.PrivateFormat.PKCS8,
                                          serialization.BestAvailableEncryption(b"secret")))
    with pytest.raises(ssl.SSLError):
        tls_context(Tls(str(keyfile), str(certfile)))
