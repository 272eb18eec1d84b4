"""A managed job on AWS launched through a controller cluster on AWS, both on moto.

Real parts: `skyc` as subprocesses (the client here, the controller on its node), the
terraform binary and AWS provider against a moto server on 127.0.0.1 (IAM and EC2),
OpenSSH sshd on loopback. What cannot exist here is the EC2 VM: moto runs no machine
and its addresses are off loopback, so each instance is given a stand-in sshd reached
through skyc's `aws.ssh_proxy_command` (tests/support/ssh_proxy.py: the controller's
instance takes stand-in 0, the job's instance stand-in 1; both are the same Unix user
`ubuntu`, so they share one home). The stand-in node is given what its machine image
and its instance role would give it:

- skyc's dependencies (hard links to this interpreter's files, in the user's
  site-packages; this machine cannot reach PyPI) and boto3 for the proxy command;
- a `~/.terraformrc` pointing at this machine's provider mirror (no registry here);
- `~/.aws/credentials` with moto's credentials, in place of the instance metadata
  service that hands a real node its instance role's credentials (no metadata
  service can run here; the role itself is created on moto and attached, and boto3
  checks it).

The scenario: `skyc jobs launch` brings the controller cluster up (its stack with the
IAM role and instance profile), ships skyc there, and the controller there provisions
the job's cluster on moto, runs the job on the second stand-in and tears the cluster
down; then `skyc destroy` of the controller leaves nothing in moto, IAM included.
Needs root (sshd, useradd) and the provider mirror; slow: three applies and destroys.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import Skyc
from tests.failover.aws_env import cloud_resources, live_instances
from tests.jobs.conftest import wait_for
from tests.support.moto_server import CREDENTIALS, MotoServer, start_moto
from tests.support.node_image import NODE_PYTHON, give_packages, node_python_missing, user_site
from tests.support.ssh_proxy import StandIns, stand_ins
from tests.support.terraform import (
    TERRAFORM_ENV,
    plugin_dir,
    requires_aws_provider,
    requires_terraform,
)

# The stand-in VMs are one Unix user (``ubuntu``): tests using them run one at a time,
# in one xdist worker (``--dist loadgroup``).
pytestmark = [pytest.mark.slow, pytest.mark.aws, requires_terraform, requires_aws_provider,
              pytest.mark.timeout(1500), pytest.mark.xdist_group("stand-in-vms")]

REGION = "us-east-1"
PROXY = Path(__file__).resolve().parents[1] / "support" / "ssh_proxy.py"


@pytest.fixture
def moto(tmp_path: Path) -> Iterator[MotoServer]:
    with start_moto(tmp_path / "moto.log") as server:
        yield server


@pytest.fixture
def vms() -> Iterator[StandIns]:
    """Two stand-ins, outside the 0700 pytest tree: the node's user runs the proxy
    command too (the controller reaches its job's node through it)."""
    if why := node_python_missing():
        pytest.skip(why)
    root = Path(tempfile.mkdtemp(prefix="skyc-vms-"))
    root.chmod(0o755)
    try:
        yield from stand_ins(root, 2)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _image(vms: StandIns) -> None:
    """What the node's machine image and instance role give it (see the docstring)."""
    give_packages(vms.home, "skyc", "boto3", owner=vms.user)
    (vms.home / ".terraformrc").write_text(
        'provider_installation {\n  filesystem_mirror {\n'
        f'    path = "{plugin_dir()}"\n  }}\n}}\n')
    aws = vms.home / ".aws"
    aws.mkdir()
    (aws / "credentials").write_text(  # in place of the instance metadata service
        "[default]\naws_access_key_id = testing\naws_secret_access_key = testing\n")
    for path in [aws, *aws.iterdir(), vms.home / ".terraformrc"]:
        shutil.chown(path, vms.user, vms.user)
        if path.is_dir():
            path.chmod(0o755)


def _proxy_command(vms: StandIns) -> str:
    """The proxy command, runnable by this machine's root and by the node's user alike:
    the node's Python with boto3, files it writes readable and writable by both."""
    vms.state.chmod(0o777)
    for path in vms.state.iterdir():
        path.chmod(0o666)
    wrapper = vms.root / "proxy.sh"
    wrapper.write_text(
        "#!/bin/sh\numask 000\n"
        f'PYTHONPATH="{user_site(vms.home)}" exec {NODE_PYTHON} {PROXY} {vms.state} "$1" "$2"\n')
    wrapper.chmod(0o755)
    return f"{wrapper} %h %p"


def test_an_aws_controller_runs_an_aws_job_and_leaves_nothing(
        jobs: Skyc, moto: MotoServer, vms: StandIns) -> None:
    jobs.env.update({**CREDENTIALS, **TERRAFORM_ENV, "SKYC_JOBS_POLL_S": "1"})
    jobs.env.pop("AWS_PROFILE", None)
    if plugin_dir():
        jobs.env["SKYC_TF_PLUGIN_DIR"] = str(plugin_dir())
    _image(vms)
    vms.tell_cloud(moto.url, [REGION])
    jobs.home.mkdir(parents=True, exist_ok=True)
    (jobs.home / "config.yaml").write_text(yaml.safe_dump({
        "infra": ["aws"],
        "aws": {"endpoint_url": moto.url, "ssh_proxy_command": _proxy_command(vms)},
        "jobs": {"controller": {"infra": f"aws/{REGION}", "resources": {
            "instance_type": "inf1.xlarge", "disk_tier": "low"}}},
    }))
    jobs.write("job.yaml", f"""\
name: on-aws
resources:
  infra: aws/{REGION}
  instance_type: inf1.xlarge
  disk_tier: low
run: |
  echo "job ran as $(id -un)"
""")
    launched = jobs("jobs", "launch", "job.yaml", "-y", "-d", timeout=600)
    assert launched.returncode == 0 and "Traceback" not in launched.output, str(launched)
    [name] = jobs.clusters()
    assert name.startswith("skyc-jobs-controller-")
    iam = moto.client("iam")
    # Named for the cluster and its owner's hash (skyc.model.owner).
    [profile] = [p for p in iam.list_instance_profiles()["InstanceProfiles"]
                 if p["InstanceProfileName"].startswith(f"skyc-{name}-")]
    [controller] = live_instances(moto, REGION)
    assert controller["IamInstanceProfile"]["Arn"] == profile["Arn"]

    done = wait_for(jobs, 1, lambda j: j["status"] in (
        "SUCCEEDED", "FAILED", "FAILED_SETUP", "FAILED_NO_RESOURCE", "CANCELLED"),
        timeout=900)
    assert done["status"] == "SUCCEEDED", (
        done, jobs("jobs", "logs", "1", "--controller", timeout=120).output)
    assert "job ran as ubuntu" in jobs.ok("jobs", "logs", "1", timeout=120).stdout
    # The job was supervised (and its cluster provisioned) on the controller's node,
    # with the node's own state; this machine holds no job cluster.
    assert (vms.home / ".skyc-controller" / "home" / "state.db").is_file()
    assert not jobs.workspace("skyc-job-1").exists()
    # The job's instance took the second stand-in; its cluster is gone, the controller's
    # instance is all that runs.
    assert sorted(vms.mapping().values()) == [0, 1]
    assert [i["InstanceId"] for i in live_instances(moto, REGION)] == [
        controller["InstanceId"]]

    destroyed = jobs("destroy", name, "-y", timeout=600)
    assert destroyed.returncode == 0, str(destroyed)
    assert jobs.clusters() == []
    assert {k: v for k, v in cloud_resources(moto).items() if v} == {}
    assert [r["RoleName"] for r in iam.list_roles()["Roles"]] == []
    assert iam.list_instance_profiles()["InstanceProfiles"] == []
