"""The managed-jobs controller cluster on AWS carries its own credentials: an IAM role
for EC2 (a policy limited to what skyc's AWS stacks do) and an instance profile on its
instances. Only the controller's cluster gets them; other clusters' stacks are as before.

Offline: the compiled stack, in both emitters' terms (the golden case
tests/fixtures/compile/aws/jobs_controller holds the files). Against moto (real
terraform and AWS provider; moto runs IAM and EC2 on 127.0.0.1): the stack applies,
boto3 finds the role, its policy and the profile attached to the instance, and the
teardown leaves none of them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from skyc.compiler import build_stack, capabilities
from skyc.compiler.aws import roles
from skyc.jobs.controller_cluster import controller_cluster_name, controller_task
from skyc.model.plan import Placement
from skyc.settings.config import JobsControllerConfig, SkycConfig
from skyc.stacks import emit
from skyc.task.candidate import ResourceCandidate
from tests.support.terraform import requires_aws_provider, requires_terraform

PLACEMENT = Placement(cloud="aws", region="us-east-1", zone="use1-az1",
                      instance_type="m6i.large", num_nodes=1, hourly_cost=0.096)
SETTINGS = JobsControllerConfig(infra="aws/us-east-1",
                                resources={"instance_type": "m6i.large", "disk_tier": "low"})


def _controller_candidate() -> ResourceCandidate:
    return controller_task(SETTINGS).candidates()[0]


def _resources(candidate: ResourceCandidate, tmp_path: Path) -> dict[str, Any]:
    stack = build_stack(controller_cluster_name(), PLACEMENT, candidate, config=SkycConfig(),
                        workspace=tmp_path / "ws")
    doc: dict[str, Any] = json.loads(emit(stack, "terraform")["main.tf.json"])["resource"]
    return doc


def _role_name(cluster: str, config: SkycConfig | None = None) -> str:
    """The role's name on AWS: the cluster's, with its owner's hash (skyc.model.owner)."""
    from skyc.model.owner import owner, owner_hash
    from skyc.settings.config import load_config

    return f"skyc-{cluster}-{owner_hash(owner(config or load_config()))}"


def test_the_controller_cluster_gets_a_role_and_its_instances_the_profile(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKYC_HOME", str(tmp_path / "home"))
    found = _resources(_controller_candidate(), tmp_path)
    [role] = found["aws_iam_role"].values()
    [profile] = found["aws_iam_instance_profile"].values()
    [policy] = found["aws_iam_role_policy"].values()
    assert role["name"] == profile["name"] == _role_name(controller_cluster_name())
    trust = json.loads(role["assume_role_policy"])
    assert trust["Statement"] == [{"Action": "sts:AssumeRole", "Effect": "Allow",
                                   "Principal": {"Service": "ec2.amazonaws.com"}}]
    assert profile["role"] == policy["role"] == "${aws_iam_role.controller.name}"
    for instance in found["aws_instance"].values():
        assert instance["iam_instance_profile"] == "${aws_iam_instance_profile.controller.name}"
    assert role["tags"]["skyc-role"] == profile["tags"]["skyc-role"] == "jobs-controller"


def test_the_controller_policy_allows_what_the_stacks_do_and_nothing_broad() -> None:
    doc = json.loads(roles.controller_policy())
    actions = [a for s in doc["Statement"] for a in s["Action"]]
    assert "ec2:RunInstances" in actions and "ec2:TerminateInstances" in actions
    assert "ec2:CreateVpc" in actions and "ec2:ImportKeyPair" in actions
    # Every resource kind the AWS lowering creates has its actions.
    from skyc.compiler.aws.lowering import TYPES

    ec2_kinds = {k for k, (tf, _) in TYPES.items() if not tf.startswith("aws_iam")}
    served = set(roles.EC2_ACTIONS) | {"ingress_rule", "egress_rule", "route",
                                       "route_table_association", "instance_state"}
    assert ec2_kinds <= served, ec2_kinds - served
    wildcard = [a for a in actions if a.endswith("*")]
    assert wildcard == ["ec2:Describe*"], wildcard
    assert {a.split(":")[0] for a in actions} == {"ec2", "iam", "s3", "ssm", "sts"}
    # IAM: the job clusters' own roles only (never the controller's: no escalation).
    for statement in doc["Statement"]:
        iam = [a for a in statement["Action"] if a.startswith("iam:")]
        if not iam or iam == ["iam:CreateServiceLinkedRole"]:
            continue
        targets = statement["Resource"]
        targets = [targets] if isinstance(targets, str) else targets
        assert all(t.split(":")[-1].startswith(("role/skyc-skyc-job-",
                                                "instance-profile/skyc-skyc-job-"))
                   for t in targets), statement
        assert not any(t.endswith(_role_name(controller_cluster_name())) for t in targets)
    [passing] = [s for s in doc["Statement"] if "iam:PassRole" in s["Action"]]
    assert passing["Condition"] == {"StringEquals": {"iam:PassedToService":
                                                     "ec2.amazonaws.com"}}
    [linked] = [s for s in doc["Statement"] if "iam:CreateServiceLinkedRole" in s["Action"]]
    assert linked["Resource"].endswith("/spot.amazonaws.com/AWSServiceRoleForEC2Spot")
    assert linked["Condition"] == {"StringEquals": {"iam:AWSServiceName":
                                                    "spot.amazonaws.com"}}


def test_other_clusters_get_no_role(tmp_path: Path) -> None:
    found = _resources(ResourceCandidate(index=0, disk_tier="low"), tmp_path)
    assert not {k for k in found if k.startswith("aws_iam")}
    assert all("iam_instance_profile" not in i for i in found["aws_instance"].values())


def test_a_long_cluster_name_gives_an_iam_sized_role_name() -> None:
    long = "c" * 63
    name = roles.role_name(long)
    assert len(name) <= 64 and name.startswith("skyc-ccc")
    assert roles.role_name(long) == name != roles.role_name("c" * 62 + "d")


def test_targets_declare_how_a_controller_gets_credentials() -> None:
    assert capabilities("aws").controller_credentials == "instance-role"
    for name in ("gcp", "azure", "kubernetes", "local", "ssh"):
        assert capabilities(name).controller_credentials is None, name


# -- against moto ---------------------------------------------------------------------


@pytest.fixture
def moto(tmp_path: Path) -> Iterator[Any]:
    from tests.support.moto_server import start_moto

    with start_moto(tmp_path / "moto.log") as server:
        yield server


@pytest.mark.slow
@pytest.mark.aws
@pytest.mark.timeout(900)
@requires_terraform
@requires_aws_provider
def test_the_controller_stack_applies_on_moto_and_leaves_no_role(
        moto: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from skyc.apply.provision import provision, teardown
    from tests.failover.aws_env import cloud_resources
    from tests.support.moto_server import CREDENTIALS
    from tests.support.terraform import TERRAFORM_ENV, plugin_dir

    monkeypatch.setenv("SKYC_HOME", str(tmp_path / "home"))
    for key, value in {**CREDENTIALS, **TERRAFORM_ENV}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    if plugin_dir():
        monkeypatch.setenv("SKYC_TF_PLUGIN_DIR", str(plugin_dir()))
    config = SkycConfig.model_validate({"aws": {"endpoint_url": moto.url}})
    name = controller_cluster_name()
    provision(name, PLACEMENT, _controller_candidate(), config=config)
    iam, ec2 = moto.client("iam"), moto.client("ec2")
    role_name = _role_name(name, config)
    try:
        role = iam.get_role(RoleName=role_name)["Role"]
        assert role["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {
            "Service": "ec2.amazonaws.com"}
        assert iam.list_role_policies(RoleName=role_name)["PolicyNames"] == [
            "skyc-job-clusters"]
        profile = iam.get_instance_profile(InstanceProfileName=role_name)
        assert [r["RoleName"] for r in profile["InstanceProfile"]["Roles"]] == [role_name]
        [instance] = [i for r in ec2.describe_instances(Filters=[
            {"Name": "tag:skyc-cluster", "Values": [name]},
            {"Name": "instance-state-name", "Values": ["running", "pending"]}])["Reservations"]
            for i in r["Instances"]]
        assert instance["IamInstanceProfile"]["Arn"] == profile["InstanceProfile"]["Arn"]
    finally:
        teardown(name)
    assert [r["RoleName"] for r in iam.list_roles()["Roles"]
            if r["RoleName"].startswith("skyc-")] == []
    assert iam.list_instance_profiles()["InstanceProfiles"] == []
    assert {k: v for k, v in cloud_resources(moto).items() if v} == {}


def test_a_task_with_s3_buckets_gets_a_role_that_reaches_them_and_nothing_else(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from skyc.task.candidate import BucketGrant

    monkeypatch.setenv("SKYC_HOME", str(tmp_path / "home"))
    candidate = ResourceCandidate(index=0, disk_tier="low", buckets=(
        BucketGrant(store="s3", bucket="src-data", write=False),
        BucketGrant(store=None, bucket="my-ckpts", write=True),   # created: the cloud's own
        BucketGrant(store="gcs", bucket="elsewhere", write=True)))  # not AWS's to grant
    found = _resources(candidate, tmp_path)
    [role] = found["aws_iam_role"].values()
    [policy] = found["aws_iam_role_policy"].values()
    [profile] = found["aws_iam_instance_profile"].values()
    assert role["name"] == profile["name"] == _role_name(controller_cluster_name())
    for instance in found["aws_instance"].values():
        assert instance["iam_instance_profile"] == "${aws_iam_instance_profile.nodes.name}"
    statements = {s["Sid"]: s for s in json.loads(policy["policy"])["Statement"]}
    assert statements["ListBuckets"]["Resource"] == ["arn:aws:s3:::my-ckpts",
                                                     "arn:aws:s3:::src-data"]
    assert statements["ReadObjects"]["Resource"] == ["arn:aws:s3:::my-ckpts/*",
                                                     "arn:aws:s3:::src-data/*"]
    assert statements["WriteObjects"]["Resource"] == ["arn:aws:s3:::my-ckpts/*"]
    assert {a for s in statements.values() for a in s["Action"]} <= {
        "s3:GetBucketLocation", "s3:ListBucket", "s3:GetObject", "s3:PutObject",
        "s3:DeleteObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"}
