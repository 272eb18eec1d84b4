"""The controller's IAM policy is enough for what it does: a job cluster's stack applied
and destroyed with credentials that have that policy and nothing else.

Real parts: the terraform binary and AWS provider against a moto server on 127.0.0.1
that enforces IAM (moto's ``INITIAL_NO_AUTH_ACTION_COUNT``: after the first requests,
each one is checked against the policies of the access key that signed it). The first
requests make an IAM user with the controller's policy (skyc.compiler.aws.roles) as
its only one, and its access key; an instance role cannot be assumed by this process,
so the user stands in for the role's session: the policy is the same document.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from skyc.compiler.aws import roles
from skyc.model.plan import Placement
from skyc.settings.config import SkycConfig
from skyc.task.candidate import ResourceCandidate
from tests.support.moto_server import CREDENTIALS, MotoServer, start_moto
from tests.support.terraform import (
    TERRAFORM_ENV,
    plugin_dir,
    requires_aws_provider,
    requires_terraform,
)

pytestmark = [pytest.mark.slow, pytest.mark.aws, requires_terraform, requires_aws_provider,
              pytest.mark.timeout(900)]

PLACEMENT = Placement(cloud="aws", region="us-east-1", zone="use1-az1",
                      instance_type="m6i.large", num_nodes=1, hourly_cost=0.096)
# The requests moto lets through before it enforces IAM: the user, its policy, its key.
SETUP_REQUESTS = 3


def _enforcing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
               setup_requests: int) -> Iterator[MotoServer]:
    monkeypatch.setenv("INITIAL_NO_AUTH_ACTION_COUNT", str(setup_requests))
    with start_moto(tmp_path / "moto.log") as server:
        monkeypatch.delenv("INITIAL_NO_AUTH_ACTION_COUNT")
        yield server


@pytest.fixture
def moto(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[MotoServer]:
    yield from _enforcing(tmp_path, monkeypatch, SETUP_REQUESTS)


@pytest.fixture
def moto_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[MotoServer]:
    """As ``moto``, the setup making one more request (moto's action names, below)."""
    yield from _enforcing(tmp_path, monkeypatch, SETUP_REQUESTS + 1)


# Moto checks some S3 requests against their API operation's name where AWS checks an
# IAM action of another name (HeadBucket is s3:ListBucket to AWS, GetBucketCors is
# s3:GetBucketCORS, ...). The user also gets moto's names, each for a request whose AWS
# action the controller's policy allows (checked below): the policy is what is tested.
MOTO_NAMES = {
    "HeadBucket": "ListBucket", "ListObjects": "ListBucket",
    "ListObjectVersions": "ListBucketVersions", "DeleteObjects": "DeleteObject",
    "GetBucketAccelerateConfiguration": "GetAccelerateConfiguration",
    "GetBucketCors": "GetBucketCORS", "GetBucketEncryption": "GetEncryptionConfiguration",
    "GetBucketLifecycleConfiguration": "GetLifecycleConfiguration",
    "GetBucketReplication": "GetReplicationConfiguration",
    "GetObjectLockConfiguration": "GetBucketObjectLockConfiguration",
    "GetPublicAccessBlock": "GetBucketPublicAccessBlock",
    "PutPublicAccessBlock": "PutBucketPublicAccessBlock",
    "DeletePublicAccessBlock": "PutBucketPublicAccessBlock",
    "PutBucketEncryption": "PutEncryptionConfiguration",
    "DeleteBucketEncryption": "PutEncryptionConfiguration",
}


def _moto_names_policy() -> str:
    """Moto's names for the S3 requests above; and the policy's own IAM statements on
    ``*``: moto checks an IAM request against ``*``, not the role's ARN, so a statement
    scoped to job clusters' roles would never match there (that scope is checked in
    tests/jobs/test_controller_cluster_aws.py); their actions are still the policy's."""
    statements = json.loads(roles.controller_policy())["Statement"]
    allowed = {a for st in statements for a in st["Action"]}
    missing = {f"s3:{a}" for a in MOTO_NAMES.values()} - allowed
    assert not missing, f"the policy lacks what these requests need on AWS: {missing}"
    iam = sorted(a for st in statements if st["Sid"] in ("JobClusterRoles",
                                                          "PassJobClusterRoles")
                 for a in st["Action"])
    return json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Resource": ["arn:aws:s3:::*", "arn:aws:s3:::*/*"],
         "Action": sorted(f"s3:{name}" for name in MOTO_NAMES)},
        {"Effect": "Allow", "Resource": "*", "Action": iam}]})


def _controller_user(moto: MotoServer, *, moto_names: bool = False) -> dict[str, str]:
    iam = moto.client("iam")
    iam.create_user(UserName="controller")
    iam.put_user_policy(UserName="controller", PolicyName="skyc-job-clusters",
                        PolicyDocument=roles.controller_policy())
    if moto_names:
        iam.put_user_policy(UserName="controller", PolicyName="moto-action-names",
                            PolicyDocument=_moto_names_policy())
    key = iam.create_access_key(UserName="controller")["AccessKey"]
    return {"AWS_ACCESS_KEY_ID": key["AccessKeyId"],
            "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"]}


def _as_controller(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                   keys: dict[str, str]) -> None:
    """This process as the controller: its own home, its user's keys (and nothing of the
    shell's AWS profile), terraform's offline provider mirror."""
    monkeypatch.setenv("SKYC_HOME", str(tmp_path / "home"))
    for key, value in {**CREDENTIALS, **TERRAFORM_ENV, **keys}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    if plugin_dir():
        monkeypatch.setenv("SKYC_TF_PLUGIN_DIR", str(plugin_dir()))


def test_a_job_cluster_applies_and_is_destroyed_with_the_controller_policy_alone(
        moto: MotoServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import boto3
    from botocore.exceptions import ClientError

    from skyc.apply.provision import provision, teardown

    keys = _controller_user(moto)
    session = boto3.Session(aws_access_key_id=keys["AWS_ACCESS_KEY_ID"],
                            aws_secret_access_key=keys["AWS_SECRET_ACCESS_KEY"],
                            region_name="us-east-1")
    # IAM is enforced now: what the policy does not allow is refused.
    with pytest.raises(ClientError, match=r"AccessDenied|not authorized"):
        session.client("iam", endpoint_url=moto.url).list_users()
    ec2 = session.client("ec2", endpoint_url=moto.url)
    ec2.describe_instances()
    with pytest.raises(ClientError, match=r"AccessDenied|UnauthorizedOperation|not authorized"):
        ec2.create_key_pair(KeyName="not-in-the-policy")  # skyc imports its key pairs

    _as_controller(monkeypatch, tmp_path, keys)
    config = SkycConfig.model_validate({"aws": {"endpoint_url": moto.url}})
    candidate = ResourceCandidate(index=0, disk_tier="low", ports=("8080",))
    # An on-demand cluster (its power state a resource too) and a spot one.
    for name, placement in (("skyc-job-1", PLACEMENT),
                            ("skyc-job-2", PLACEMENT.model_copy(update={"use_spot": True}))):
        info = provision(name, placement, candidate, config=config)
        assert len(info.nodes) == 1
        live = [i for r in ec2.describe_instances()["Reservations"] for i in r["Instances"]
                if i["State"]["Name"] == "running"]
        assert len(live) == 1
        assert (live[0].get("InstanceLifecycle") == "spot") == placement.use_spot
        teardown(name)
        left = [i for r in ec2.describe_instances()["Reservations"] for i in r["Instances"]
                if i["State"]["Name"] not in ("terminated", "shutting-down")]
        assert left == []
        assert [v for v in ec2.describe_vpcs()["Vpcs"] if not v.get("IsDefault")] == []


def test_a_job_cluster_mounting_a_bucket_and_the_bucket_stack_work_with_the_policy_alone(
        moto_named: MotoServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A managed job whose task creates a bucket: its stack (the bucket) and the job
    cluster's (a role reaching the bucket, passed to its instances) both apply and are
    destroyed with the controller's policy alone."""
    import boto3
    from botocore.exceptions import ClientError

    from skyc.apply.buckets import delete_bucket, ensure_bucket
    from skyc.apply.provision import provision, teardown
    from skyc.compiler.aws.roles import role_name
    from skyc.model.owner import owner, owner_hash
    from skyc.state.database import StateDB
    from skyc.storage.uses import BucketUse
    from skyc.task.candidate import BucketGrant

    moto = moto_named
    keys = _controller_user(moto, moto_names=True)
    _as_controller(monkeypatch, tmp_path, keys)
    config = SkycConfig.model_validate({"aws": {"endpoint_url": moto.url}})
    use = BucketUse(target="~/ckpt", store="s3", bucket="job-ckpts", mode="MOUNT_CACHED",
                    created=True, persistent=False)
    with StateDB() as db:
        ensure_bucket(use, "us-east-1", "skyc-job-3", config, db, lambda *_: None, None)
        candidate = ResourceCandidate(index=0, disk_tier="low", buckets=(
            BucketGrant(store=None, bucket="job-ckpts", write=True),))
        provision("skyc-job-3", PLACEMENT, candidate, config=config)
        session = boto3.Session(aws_access_key_id=keys["AWS_ACCESS_KEY_ID"],
                                aws_secret_access_key=keys["AWS_SECRET_ACCESS_KEY"],
                                region_name="us-east-1")
        iam = session.client("iam", endpoint_url=moto.url)
        name = role_name("skyc-job-3", owner_hash(owner(config)))
        assert iam.get_role(RoleName=name)["Role"]["RoleName"] == name
        teardown("skyc-job-3")
        delete_bucket("job-ckpts", db)
    with pytest.raises(ClientError, match="NoSuchEntity"):
        iam.get_role(RoleName=name)
    with pytest.raises(ClientError, match=r"404|Not Found"):
        session.client("s3", endpoint_url=moto.url).head_bucket(Bucket="job-ckpts")
