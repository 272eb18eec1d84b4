"""A service whose replicas mount a bucket, end to end on ``local``: real ``python -m
skyc serve`` processes and controller, real terraform for the replica's stack, the real
node agent, rclone and FUSE mounting from a real moto S3 server on 127.0.0.1 (config
``aws.endpoint_url``). The replica serves the mounted bucket's files; a bucket that does
not exist is refused by ``serve up`` before the service exists; ``down`` leaves no
mount behind and the user's key is in no file skyc wrote."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import Skyc
from tests.serve.conftest import cleanup, get, make_runner, ready, wait_status
from tests.support.moto_server import MotoServer, start_moto
from tests.support.storage import FUSE_UNAVAILABLE, USER_SECRET, storage_user, user_s3

pytestmark = [pytest.mark.slow, pytest.mark.skipif(FUSE_UNAVAILABLE is not None,
                                                   reason=FUSE_UNAVAILABLE or "")]

SERVICE = """\
name: site
service:
  readiness_probe: /hello.txt
  replicas: 1
resources:
  infra: local
file_mounts:
  ~/site:
    source: s3://{bucket}
run: cd ~/site && exec python3 -m http.server "$SKYC_SERVE_PORT" --bind 127.0.0.1
"""


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Skyc, MotoServer]]:
    with start_moto(tmp_path / "moto.log", skyc_amis=False, front=False) as moto:
        runner = make_runner(tmp_path / "serve")
        storage_user(runner, moto)
        try:
            yield runner, moto
        finally:
            cleanup(runner)


def _mounted_under(root: Path) -> list[str]:
    lines = Path("/proc/self/mountinfo").read_text().splitlines()
    return [ln.split()[4] for ln in lines if ln.split()[4].startswith(str(root))]


def test_replicas_serve_what_their_bucket_holds(served: tuple[Skyc, MotoServer]) -> None:
    runner, moto = served
    bucket = f"site-{uuid.uuid4().hex[:8]}"
    s3 = user_s3(moto)
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="hello.txt", Body=b"hello from the bucket\n")

    runner.write("missing.yaml", SERVICE.format(bucket=f"{bucket}-missing"))
    refused = runner("serve", "up", "missing.yaml", "-n", "nope", "-y")
    assert refused.returncode == 1
    assert f"s3://{bucket}-missing does not exist" in refused.stderr, str(refused)
    listed = json.loads(runner.ok("serve", "status", "--format", "json").stdout)
    assert listed["services"] == []

    runner.write("site.yaml", SERVICE.format(bucket=bucket))
    up = runner.ok("serve", "up", "site.yaml", "-n", "site", "-y", timeout=300)
    name, url = up.stdout.split()
    wait_status(runner, name, lambda d: len(ready(d)) == 1, timeout=180)
    assert get(f"{url}/hello.txt") == "hello from the bucket\n"

    runner.ok("serve", "down", name, "-y", timeout=180)
    assert _mounted_under(runner.home) == []
    leaked = [p for p in runner.home.rglob("*") if p.is_file()
              and USER_SECRET.encode() in p.read_bytes()]
    assert leaked == []
