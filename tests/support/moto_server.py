"""A real moto server on a free loopback port, as a session-scoped pytest fixture.

Tests point the AWS provider (``aws.endpoint_url``) and boto3 at ``server.url``.

``server.url`` is a replaying front (a :class:`tests.support.fault_proxy.FaultProxy`
with no rules) and ``server.upstream_url`` moto itself. Under load (four terraform
applies on two cores) an answer now and then never reaches the provider, whose SDK
then sends the same request again (the same ``amz-sdk-invocation-id``, attempt 2):
moto would run it twice and a create fail with a duplicate error (CI saw
``LimitExceeded`` adding a role to an instance profile, ``InvalidKeyPair.Duplicate``,
``RouteAlreadyExists``, ``Resource.AlreadyAssociated``). The front answers a retry of
a request it already answered with that answer, as the fault proxy does: what the
tests check is skyc, not how often loopback drops an answer on a loaded machine.
"""

from __future__ import annotations

import csv
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import skyc.compiler
from tests.support.fault_proxy import FaultProxy

CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class MotoServer:
    url: str
    process: subprocess.Popen[bytes]
    upstream_url: str = ""
    front: FaultProxy | None = None

    def reset(self) -> None:
        base = self.upstream_url or self.url
        request = urllib.request.Request(f"{base}/moto-api/reset", method="POST")
        urllib.request.urlopen(request, timeout=10).read()

    def client(self, service: str, region: str = "us-east-1") -> Any:
        import boto3

        return boto3.client(
            service, region_name=region, endpoint_url=self.url,
            aws_access_key_id="testing", aws_secret_access_key="testing",
        )

    def stop(self) -> None:
        if self.front is not None:
            self.front.stop()
            self.front = None
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> MotoServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def write_amis(path: Path) -> Path:
    """The AMIs of skyc's image table, in moto's ``MOTO_AMIS_PATH`` format.

    Moto knows only the images it is told about; the provider reads the AMI
    before creating an instance, so the server is given skyc's real image ids.
    """
    rows = csv.DictReader((Path(skyc.compiler.__file__).parent / "data/aws_images.csv").open())
    amis = {}
    for row in rows:
        if not row["ImageId"]:
            continue
        amis[row["ImageId"]] = {
            "ami_id": row["ImageId"], "state": "available", "public": True,
            "owner_id": "898082745236", "image_location": row["Tag"], "sriov": "simple",
            "root_device_type": "ebs", "root_device_name": "/dev/sda1",
            "description": row["Tag"], "image_type": "machine", "platform": None,
            "architecture": "arm64" if "arm64" in row["Tag"] else "x86_64",
            "name": f"{row['Tag']}-{row['Region']}", "virtualization_type": "hvm",
            "hypervisor": "xen",
        }
    path.write_text(json.dumps(sorted(amis.values(), key=lambda a: a["ami_id"])))
    return path


def start_moto(log: Path, host: str = "127.0.0.1", *, skyc_amis: bool = True,
               front: bool = True) -> MotoServer:
    """Start moto; with ``skyc_amis`` it knows skyc's image table instead of its own AMIs.

    With ``front`` (the default) ``url`` is the replaying front (see the module's doc).
    """
    port = free_port(host)
    env = {**os.environ, **CREDENTIALS}
    if skyc_amis:
        env["MOTO_AMIS_PATH"] = str(write_amis(log.with_name("amis.json")))
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", host, "-p", str(port)],
            stdout=out, stderr=subprocess.STDOUT, env=env,
        )
    url = f"http://{host}:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"moto server exited: {log.read_text()[-2000:]}")
        try:
            urllib.request.urlopen(f"{url}/moto-api/", timeout=1).read()
        except OSError:
            time.sleep(0.2)
            continue
        if not front:
            return MotoServer(url=url, process=proc, upstream_url=url)
        replaying = FaultProxy(upstream=url).start()
        return MotoServer(url=replaying.url, process=proc, upstream_url=url, front=replaying)
    proc.kill()
    raise RuntimeError("moto server did not start within 60 s")


@pytest.fixture(scope="session")
def moto_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoServer]:
    with start_moto(tmp_path_factory.mktemp("moto") / "moto.log") as server:
        yield server
