"""AWS quota errors: every quota EC2 (and IAM, S3) can refuse one of skyc's resources
with is classified with the scope where the quota counts, so failover moves on.

The texts are EC2's error codes and messages (the EC2 API reference's error list) in
the three shapes they reach the classifier in: terraform's AWS provider (``creating
EC2 VPC: operation error EC2: CreateVpc, https response error StatusCode: 400, ...,
api error <Code>: <message>``, as a ``terraform apply -json`` diagnostic line), the
Pulumi engine's event for the same provider bridged (``aws:ec2:Vpc (vpc):`` /
``error: 1 error occurred:`` / ``* <error>``), and the AWS SDK's plain
``<Code>: <message>``. The recorded terraform runs of the capacity codes are in
test_classify.py.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from skyc.apply.failover import blocked_scope
from skyc.compiler import classify_error
from skyc.compiler.aws.errors import QUOTAS
from skyc.errors import ProvisionError
from skyc.model.diagnostics import Diagnostic
from skyc.model.plan import Placement
from skyc.optimizer.blocked import Blocked
from skyc.stacks.terraform_output import diagnostic

PLACEMENT = Placement(cloud="aws", region="us-east-1", zone="use1-az1",
                      instance_type="p4d.24xlarge", accelerators={"A100": 8}, hourly_cost=32.0)

# code -> (what the provider was doing, the EC2 action, EC2's message, terraform address,
#          the scope to block)
QUOTA_ERRORS: dict[str, tuple[str, str, str, str, str]] = {
    "VpcLimitExceeded": ("creating EC2 VPC", "CreateVpc",
                         "The maximum number of VPCs has been reached.", "aws_vpc.main",
                         "region"),
    "AddressLimitExceeded": ("creating EC2 EIP", "AllocateAddress",
                             "The maximum number of addresses has been reached.",
                             "aws_eip.node_0_efa_0", "region"),
    "InternetGatewayLimitExceeded": ("creating EC2 Internet Gateway", "CreateInternetGateway",
                                     "The maximum number of internet gateways has been "
                                     "reached.", "aws_internet_gateway.main", "region"),
    "SubnetLimitExceeded": ("creating EC2 Subnet", "CreateSubnet",
                            "The maximum number of subnets has been reached.",
                            "aws_subnet.main", "region"),
    "RouteTableLimitExceeded": ("creating EC2 Route Table", "CreateRouteTable",
                                "The maximum number of route tables has been reached.",
                                "aws_route_table.main", "region"),
    "SecurityGroupLimitExceeded": ("creating Security Group (skyc-x)", "CreateSecurityGroup",
                                   "The maximum number of security groups has been reached.",
                                   "aws_security_group.main", "region"),
    "RulesPerSecurityGroupLimitExceeded": (
        "creating VPC Security Group Rule", "AuthorizeSecurityGroupIngress",
        "The maximum number of rules per security group has been reached.",
        "aws_vpc_security_group_ingress_rule.tcp_22", "region"),
    "NetworkInterfaceLimitExceeded": ("creating EC2 Network Interface", "CreateNetworkInterface",
                                      "The maximum number of network interfaces has been "
                                      "reached.", "aws_network_interface.node_0_efa_0",
                                      "region"),
    "PlacementGroupLimitExceeded": ("creating EC2 Placement Group (skyc-x)",
                                    "CreatePlacementGroup",
                                    "The maximum number of placement groups has been reached.",
                                    "aws_placement_group.main", "region"),
    "KeyPairLimitExceeded": ("importing EC2 Key Pair (skyc-x)", "ImportKeyPair",
                             "Maximum number of key pairs has been reached.",
                             "aws_key_pair.main", "region"),
    "VolumeLimitExceeded": ("creating EC2 Instance", "RunInstances",
                            "You have exceeded your maximum gp3 storage limit of 50 TiB in this "
                            "region.", "aws_instance.node_0", "region"),
    "MaxIOPSLimitExceeded": ("creating EC2 Instance", "RunInstances",
                             "You have exceeded your maximum io2 IOPS limit in this region.",
                             "aws_instance.node_0", "region"),
    "ResourceLimitExceeded": ("creating EC2 Instance", "RunInstances",
                              "You have exceeded an Amazon EC2 resource limit.",
                              "aws_instance.node_0", "region"),
    "VcpuLimitExceeded": ("creating EC2 Instance", "RunInstances",
                          "You have requested more vCPU capacity than your current vCPU limit "
                          "of 0 allows for the instance bucket that the specified instance "
                          "type belongs to.", "aws_instance.node_0", "region"),
    "LimitExceeded": ("creating IAM Role (skyc-x)", "CreateRole",
                      "Cannot exceed quota for RolesPerAccount: 1000", "aws_iam_role.node",
                      "cloud"),
}


def _provider_text(code: str) -> str:
    doing, action, message, _, _ = QUOTA_ERRORS[code]
    service = "IAM" if action == "CreateRole" else "EC2"
    return (f"{doing}: operation error {service}: {action}, https response error StatusCode: "
            f"400, RequestID: 5b0c1f0e-9f4e-4d1a-a1f0-000000000000, api error {code}: {message}")


def _terraform(code: str) -> Diagnostic:
    text = _provider_text(code)
    line: dict[str, Any] = {
        "@level": "error", "@message": f"Error: {text}", "type": "diagnostic",
        "diagnostic": {"severity": "error", "summary": text, "detail": "",
                       "address": QUOTA_ERRORS[code][3]},
    }
    diag = diagnostic(line)
    assert diag is not None
    return diag


def _pulumi(code: str) -> Diagnostic:
    from pulumi.automation.events import EngineEvent

    from skyc.stacks.pulumi_events import diagnostic as pulumi_diagnostic

    name = QUOTA_ERRORS[code][3].split(".")[1]
    urn = f"urn:pulumi:c::skyc::aws:ec2/vpc:Vpc::{name}"
    event = {"sequence": 7, "timestamp": 1764600000, "diagnosticEvent": {
        "urn": urn, "prefix": "error: ", "color": "never", "severity": "error",
        "message": f"  aws:ec2:Vpc ({name}):\n    error: 1 error occurred:\n"
                   f"\t* {_provider_text(code)}\n\n"}}
    diag = pulumi_diagnostic(EngineEvent.from_json(json.loads(json.dumps(event))))
    assert diag is not None and diag.address == urn
    return diag


def _sdk(code: str) -> Diagnostic:
    message = QUOTA_ERRORS[code][2]
    return Diagnostic(engine="terraform", summary=f"{code}: {message}",
                      detail="\tstatus code: 400, request id: 5b0c1f0e", address="aws_vpc.main")


def _classified(diag: Diagnostic) -> ProvisionError:
    error = classify_error("aws", [diag], placement=PLACEMENT)
    assert error is not None, diag.text
    return error


@pytest.mark.parametrize("code", sorted(QUOTA_ERRORS))
def test_quota_errors_block_where_the_quota_counts(code: str) -> None:
    scope = QUOTA_ERRORS[code][4]
    error = _classified(_terraform(code))
    assert (error.code, error.scope, error.retryable) == (code, scope, True)
    assert error.failure.resource == QUOTA_ERRORS[code][3]
    expected = (Blocked(cloud="aws") if scope == "cloud"
                else Blocked(cloud="aws", region="us-east-1"))
    assert blocked_scope(PLACEMENT, error) == expected
    # The message names the quota and where it is raised: a retried error's hint is
    # not shown, the attempt's message is.
    name = "RolesPerAccount" if code == "LimitExceeded" else QUOTAS[code].name  # IAM's words
    assert f"quota '{name}'" in error.message
    assert "raise it in Service Quotas" in error.message
    assert error.hint and ("Service Quotas" in error.hint or "service-quotas" in error.hint)


@pytest.mark.parametrize("code", sorted(QUOTA_ERRORS))
def test_the_same_verdict_from_pulumi_events_and_the_sdk_text(code: str) -> None:
    pytest.importorskip("pulumi", reason="the Pulumi SDK (skyc[pulumi]) is not installed")
    by_terraform = _classified(_terraform(code))
    for error in (_classified(_pulumi(code)), _classified(_sdk(code))):
        assert (error.code, error.scope, error.retryable) == (
            by_terraform.code, by_terraform.scope, by_terraform.retryable)


def test_vpc_and_address_quotas_say_how_to_raise_them() -> None:
    vpc = _classified(_terraform("VpcLimitExceeded"))
    assert "quota 'VPCs per Region' (vpc L-F678F1CE) in us-east-1" in vpc.message
    assert vpc.hint == (
        "request more: aws service-quotas request-service-quota-increase --service-code vpc "
        "--quota-code L-F678F1CE --desired-value <n> --region us-east-1; or remove what "
        "counts against it")
    eip = _classified(_terraform("AddressLimitExceeded"))
    assert "quota 'EC2-VPC Elastic IPs' (ec2 L-0263D0A3) in us-east-1" in eip.message
    assert eip.hint and "--quota-code L-0263D0A3" in eip.hint


def test_an_account_wide_quota_names_iams_quota_and_no_region() -> None:
    error = _classified(_terraform("LimitExceeded"))
    assert "quota 'RolesPerAccount' (iam): raise it in Service Quotas" in error.message
    assert "us-east-1:" not in error.message.split("(", 1)[-1]


def test_a_subnet_without_free_addresses_blocks_its_zone() -> None:
    text = ("creating EC2 Instance: operation error EC2: RunInstances, https response error "
            "StatusCode: 400, RequestID: x, api error InsufficientFreeAddressesInSubnet: There "
            "are not enough free addresses in subnet 'subnet-0a1b2c3d' to satisfy the requested "
            "number of instances.")
    error = _classified(Diagnostic(engine="terraform", summary=text,
                                   address="aws_instance.node_0"))
    assert (error.scope, error.retryable) == ("zone", True)
    assert blocked_scope(PLACEMENT, error) == Blocked(cloud="aws", region="us-east-1",
                                                      zone="use1-az1")


@pytest.mark.parametrize("code", ["Blocked", "PendingVerification", "TagLimitExceeded"])
def test_account_and_request_refusals_stop_with_the_fix(code: str) -> None:
    error = _classified(Diagnostic(engine="terraform", summary=f"api error {code}: refused",
                                   address="aws_instance.node_0"))
    assert (error.scope, error.retryable) == ("cloud", False)
    assert error.hint and "image_id" not in error.hint
