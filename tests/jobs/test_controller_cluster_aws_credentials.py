"""Whether a controller cluster may take a job on a cloud: its node's own ``skyc check``
decides, and a controller on AWS sees the credentials of its instance role.

The controller's node is played by a real ``python -m skyc check --format json``
subprocess with its own HOME and SKYC_HOME (as the controller's commands run on its
head node); only the transport to it (SSH) is left out, since what is tested is how
the client reads the node's answer. On a real EC2 node the credentials come from the
instance metadata service; no such service can exist here, so:

- the node's ``~/.aws/credentials`` stands in for the metadata service's credentials
  where the client's decision is tested;
- a loopback HTTP server stands in for the metadata service itself (IMDSv2's token
  and role listing) where the check's own reading of it is tested.
"""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest
import yaml

from skyc.compiler.aws import credentials as aws_credentials
from skyc.errors import UnsupportedFeature
from skyc.jobs.remote import RemoteController
from skyc.model.nodes import ClusterInfo
from skyc.runtime.transport import CommandResult
from skyc.settings.config import JobsControllerConfig, SkycConfig
from skyc.task import Task


class _NodeController(RemoteController):
    """A controller whose commands run as subprocesses with the node's HOME."""

    node_home: Path
    config: dict[str, Any]

    def _checked(self, args: Sequence[str], **kw: Any) -> CommandResult:
        home = self.node_home / ".skyc-controller" / "home"
        home.mkdir(parents=True, exist_ok=True)
        (home / "config.yaml").write_text(yaml.safe_dump(self.config))
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("AWS_", "GOOGLE_", "AZURE_", "KUBECONFIG"))}
        env.update(HOME=str(self.node_home), SKYC_HOME=str(home),
                   AWS_EC2_METADATA_DISABLED="true", NO_COLOR="1")
        done = subprocess.run([sys.executable, "-m", "skyc", *args], env=env,
                              capture_output=True, timeout=120, stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stderr
        return CommandResult(done.returncode, done.stdout, done.stderr)


def _controller(tmp_path: Path, *, node_credentials: bool,
                config: dict[str, Any]) -> _NodeController:
    controller = _NodeController(JobsControllerConfig(infra="aws/us-east-1"))
    controller.node_home = tmp_path / "node"
    controller.node_home.mkdir()
    controller.config = config
    if node_credentials:  # in place of what the instance metadata service would give
        aws = controller.node_home / ".aws"
        aws.mkdir()
        (aws / "credentials").write_text(
            "[default]\naws_access_key_id = testing\naws_secret_access_key = testing\n")
    return controller


def _info(cloud: str, tmp_path: Path) -> ClusterInfo:
    return ClusterInfo(name="skyc-jobs-controller-test", cloud=cloud, region="us-east-1",
                       nodes=[], workspace=str(tmp_path / "ws"))


def _job(infra: str) -> Task:
    return Task.model_validate({"name": "train", "run": "echo hi",
                                "resources": {"infra": infra, "cpus": 2}})


@pytest.fixture(autouse=True)
def _client_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKYC_HOME", str(tmp_path / "client"))


def test_an_aws_controller_whose_node_has_credentials_takes_an_aws_job(
        tmp_path: Path) -> None:
    controller = _controller(tmp_path, node_credentials=True, config={"infra": ["aws"]})
    controller._refuse_without_credentials([_job("aws/us-east-1")], SkycConfig(),
                                           _info("aws", tmp_path))


def test_a_listed_cloud_without_credentials_on_the_node_is_still_refused(
        tmp_path: Path) -> None:
    # The config lists aws (so the node's check says "enabled"), yet the node has no
    # credentials: refused, saying that re-applying the controller attaches its role.
    controller = _controller(tmp_path, node_credentials=False, config={"infra": ["aws"]})
    with pytest.raises(UnsupportedFeature) as caught:
        controller._refuse_without_credentials([_job("aws/us-east-1")], SkycConfig(),
                                               _info("aws", tmp_path))
    error = caught.value
    assert "cannot provision aws: no aws credentials found" in error.message
    assert error.hint is not None
    assert "from its instance role" in error.hint and "controller-up" in error.hint


def test_a_cloud_other_than_the_controllers_own_is_refused_with_the_reason(
        tmp_path: Path) -> None:
    controller = _controller(tmp_path, node_credentials=True, config={})
    with pytest.raises(UnsupportedFeature) as caught:
        controller._refuse_without_credentials([_job("gcp/us-central1")], SkycConfig(),
                                               _info("aws", tmp_path))
    error = caught.value
    assert "cannot provision gcp" in error.message
    assert error.hint is not None
    assert "own cloud only, on aws (an instance role)" in error.hint


# -- the check's own reading of the metadata service --------------------------------


class _MetadataStandIn(http.server.BaseHTTPRequestHandler):
    """IMDSv2 as EC2 answers it: a token for a PUT, the role for a GET with it."""

    seen: ClassVar[list[str]] = []
    role = "skyc-skyc-jobs-controller-test"

    def do_PUT(self) -> None:  # the handler's protocol names it
        self.seen.append(f"PUT {self.path}")
        self._answer(200, "token-123")

    def do_GET(self) -> None:
        self.seen.append(f"GET {self.path}")
        if self.headers.get("X-aws-ec2-metadata-token") != "token-123":
            self._answer(401, "")
        elif self.path == "/latest/meta-data/iam/security-credentials/":
            self._answer(200, self.role)
        else:
            self._answer(404, "")

    def _answer(self, code: int, body: str) -> None:
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        return None


@pytest.fixture
def metadata(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _MetadataStandIn)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _MetadataStandIn.seen = []
    monkeypatch.setattr(aws_credentials, "IMDS_URL",
                        f"http://127.0.0.1:{server.server_address[1]}")
    vendor = tmp_path / "sys_vendor"
    vendor.write_text("Amazon EC2\n")
    monkeypatch.setattr(aws_credentials, "EC2_MARKERS", ((vendor, "Amazon EC2"),))
    try:
        yield _MetadataStandIn.seen
    finally:
        server.shutdown()
        server.server_close()


def test_on_ec2_the_instance_role_counts_as_credentials(
        metadata: list[str], tmp_path: Path) -> None:
    found = aws_credentials.credentials({}, tmp_path)
    assert found.ok, found
    assert found.reason == "the instance role skyc-skyc-jobs-controller-test (EC2 metadata)"
    assert metadata == ["PUT /latest/api/token",
                        "GET /latest/meta-data/iam/security-credentials/"]


def test_the_metadata_service_is_asked_only_on_ec2_and_not_when_disabled(
        metadata: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert not aws_credentials.credentials({"AWS_EC2_METADATA_DISABLED": "true"},
                                           tmp_path).ok
    monkeypatch.setattr(aws_credentials, "EC2_MARKERS",
                        ((tmp_path / "no-such-file", "Amazon EC2"),))
    assert not aws_credentials.credentials({}, tmp_path).ok
    assert metadata == []


def test_an_instance_without_a_role_has_no_credentials(
        metadata: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_MetadataStandIn, "role", "")
    found = aws_credentials.credentials({}, tmp_path)
    assert not found.ok and found.reason == "no aws credentials found"


def test_node_check_reports_credentials_apart_from_enabled(tmp_path: Path) -> None:
    controller = _controller(tmp_path, node_credentials=False, config={"infra": ["aws"]})
    doc = json.loads(controller._checked(["check", "--format", "json"]).stdout)
    aws = next(e for e in doc["infra"] if e["name"] == "aws")
    assert (aws["enabled"], aws["credentials"]) == (True, False)
    local = next(e for e in doc["infra"] if e["name"] == "local")
    assert local["credentials"] is None
