"""Classify AWS provisioning failures from the engine's neutral diagnostics.

Both engines carry the EC2 API's error text: terraform's provider prints
``api error <Code>: <message>``, Pulumi's (the same provider, bridged) prints
the same inside the engine's error event, and the AWS SDK's plain form is
``<Code>: <message>``. The code decides, never the engine.

A quota error blocks where the quota counts: EC2 and VPC quotas are per region
(the 6th VPC of a region fails with ``VpcLimitExceeded``, the next region has its
own five), IAM and S3 bucket quotas are per account (every region shares them:
the cloud). Its message names the quota and where to raise it (Service Quotas),
since failover moves on and the hint of a retried error is not shown.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from skyc.errors import ProvisionError, ProvisionFailure, Scope
from skyc.model.diagnostics import Diagnostic
from skyc.model.plan import Placement

# code -> (scope to block, retryable elsewhere)
_CODES: dict[str, tuple[Scope, bool]] = {
    # No capacity in the zone (a subnet lives in one zone: so do its addresses).
    "InsufficientInstanceCapacity": ("zone", True),
    "InsufficientHostCapacity": ("zone", True),
    "InsufficientCapacityOnHost": ("zone", True),
    "InsufficientReservedInstanceCapacity": ("zone", True),
    "InsufficientCapacity": ("zone", True),
    "InsufficientVolumeCapacity": ("zone", True),
    "ReservationCapacityExceeded": ("zone", True),
    "InsufficientFreeAddressesInSubnet": ("zone", True),
    "Unsupported": ("zone", True),
    "SpotMaxPriceTooLow": ("zone", True),
    "InsufficientAddressCapacity": ("region", True),
    "OptInRequired": ("region", True),
    "AuthFailure": ("cloud", False),
    "UnauthorizedOperation": ("cloud", False),
    "InvalidClientTokenId": ("cloud", False),
    "SignatureDoesNotMatch": ("cloud", False),
    "ExpiredToken": ("cloud", False),
    "Blocked": ("cloud", False),
    "PendingVerification": ("cloud", False),
    "MissingParameter": ("cloud", False),
    "ValidationError": ("cloud", False),
    "TagLimitExceeded": ("cloud", False),
    # Transient: the same placement again. EC2 throttles bursts of calls, and it is
    # eventually consistent: a resource the stack has just created may be "not found"
    # by the next call (revoking a new security group's default egress rule, tagging a
    # new instance). A missing image or key pair is not transient: see _rule.
    "RequestLimitExceeded": ("placement", True),
    "Throttling": ("placement", True),
    "ThrottlingException": ("placement", True),
    "InternalError": ("placement", True),
    "InternalFailure": ("placement", True),
    "ServiceUnavailable": ("placement", True),
    "Unavailable": ("placement", True),
    "InvalidGroup.NotFound": ("placement", True),
    "InvalidPermission.NotFound": ("placement", True),
    "InvalidInstanceID.NotFound": ("placement", True),
    "InvalidSubnetID.NotFound": ("placement", True),
    "InvalidVpcID.NotFound": ("placement", True),
    "InvalidRouteTableID.NotFound": ("placement", True),
    "InvalidInternetGatewayID.NotFound": ("placement", True),
    "InvalidNetworkInterfaceID.NotFound": ("placement", True),
    "InvalidVolume.NotFound": ("placement", True),
}


@dataclass(frozen=True)
class Quota:
    """A quota an error code stands for, as Service Quotas names it."""

    name: str
    service: str               # the Service Quotas service code (ec2, vpc, ebs, iam, s3)
    scope: Scope = "region"    # where it counts: what failover blocks
    code: str | None = None    # the quota code, where it is one fixed quota


# code -> the quota it means (every one retryable elsewhere: another region, or for an
# account-wide quota another cloud, has its own).
QUOTAS: dict[str, Quota] = {
    "VcpuLimitExceeded": Quota("Running On-Demand instances (vCPUs) of the type's family",
                               "ec2"),
    "InstanceLimitExceeded": Quota("Running On-Demand instances of the type", "ec2"),
    "MaxSpotInstanceCountExceeded": Quota("Spot Instance requests (vCPUs) of the type's "
                                          "family", "ec2"),
    "ResourceLimitExceeded": Quota("the EC2 resource named in the message", "ec2"),
    "VpcLimitExceeded": Quota("VPCs per Region", "vpc", code="L-F678F1CE"),
    "AddressLimitExceeded": Quota("EC2-VPC Elastic IPs", "ec2", code="L-0263D0A3"),
    "InternetGatewayLimitExceeded": Quota("Internet gateways per Region", "vpc"),
    "SubnetLimitExceeded": Quota("Subnets per VPC", "vpc"),
    "RouteTableLimitExceeded": Quota("Route tables per VPC", "vpc"),
    "RouteLimitExceeded": Quota("Routes per route table", "vpc"),
    "NetworkAclLimitExceeded": Quota("Network ACLs per VPC", "vpc"),
    "SecurityGroupLimitExceeded": Quota("VPC security groups per Region", "vpc"),
    "RulesPerSecurityGroupLimitExceeded": Quota("Inbound or outbound rules per security "
                                                "group", "vpc"),
    "SecurityGroupsPerInstanceLimitExceeded": Quota("Security groups per network interface",
                                                    "vpc"),
    "SecurityGroupsPerInterfaceLimitExceeded": Quota("Security groups per network interface",
                                                     "vpc"),
    "NetworkInterfaceLimitExceeded": Quota("Network interfaces per Region", "vpc"),
    "NatGatewayLimitExceeded": Quota("NAT gateways per Availability Zone", "vpc",
                                     scope="zone"),
    "VpcEndpointLimitExceeded": Quota("VPC endpoints per Region", "vpc"),
    "PlacementGroupLimitExceeded": Quota("Placement groups per Region", "ec2"),
    "KeyPairLimitExceeded": Quota("Key pairs per Region", "ec2"),
    "HostLimitExceeded": Quota("Dedicated Hosts of the type", "ec2"),
    "VolumeLimitExceeded": Quota("Storage of the EBS volume type (TiB)", "ebs"),
    "MaxIOPSLimitExceeded": Quota("IOPS of the EBS volume type", "ebs"),
    "SnapshotLimitExceeded": Quota("Snapshots per Region", "ebs"),
    # Account-wide: every region of the account shares them.
    "LimitExceeded": Quota("IAM roles or instance profiles per account", "iam",
                           scope="cloud"),
    "TooManyBuckets": Quota("General purpose buckets", "s3", scope="cloud"),
}

_API_ERROR = re.compile(r"api error ([A-Za-z][\w.]*)")
_STATUS = re.compile(r"\b([A-Z][A-Za-z]+(?:\.[A-Za-z]+)?): ")
# IAM's own words for the quota it hit: "Cannot exceed quota for RolesPerAccount: 1000".
_IAM_QUOTA = re.compile(r"quota for (\w+)")


def error_code(text: str) -> str | None:
    """The AWS error code in a diagnostic's text, e.g. ``InsufficientInstanceCapacity``."""
    match = _API_ERROR.search(text)
    if match:
        return match.group(1)
    for match in _STATUS.finditer(text):
        code = match.group(1)
        if _rule(code) is not None:
            return code
    return None


def _rule(code: str) -> tuple[Scope, bool] | None:
    if code in _CODES:
        return _CODES[code]
    if code in QUOTAS:
        return (QUOTAS[code].scope, True)
    if code.startswith("Invalid") or code.startswith("Malformed"):
        return ("cloud", False)  # a bad parameter: another placement will not fix it
    return None


def quota_note(code: str, text: str, region: str | None) -> str | None:
    """What a quota error says about the quota: its name, and where to raise it."""
    quota = QUOTAS.get(code)
    if quota is None:
        return None
    name = quota.name
    named = _IAM_QUOTA.search(text) if quota.service == "iam" else None
    if named:
        name = named.group(1)
    where = "" if quota.scope == "cloud" or not region else f" in {region}"
    ref = f"{quota.service} {quota.code}" if quota.code else quota.service
    return f"quota '{name}' ({ref}){where}: raise it in Service Quotas"


def _quota_hint(code: str, region: str | None) -> str | None:
    quota = QUOTAS.get(code)
    if quota is None:
        return None
    if quota.code:
        at = f" --region {region}" if region and quota.scope != "cloud" else ""
        return (f"request more: aws service-quotas request-service-quota-increase "
                f"--service-code {quota.service} --quota-code {quota.code} "
                f"--desired-value <n>{at}; or remove what counts against it")
    return (f"request more '{quota.name}' in the Service Quotas console (service "
            f"{quota.service}), or remove what counts against it")


def classify(
    diagnostics: Sequence[Diagnostic], placement: Placement | None
) -> ProvisionError | None:
    """The first classifiable error among the diagnostics, or None."""
    for diag in diagnostics:
        text = diag.text
        code = error_code(text)
        rule = _rule(code) if code else None
        if code is None or rule is None:
            continue
        scope, retryable = rule
        region = placement.region if placement else None
        failure = ProvisionFailure(
            code=code,
            scope=scope,
            retryable=retryable,
            cloud="aws",
            region=region,
            zone=placement.zone if placement else None,
            resource=diag.address,
            raw=text,
        )
        where = placement.infra if placement else "aws"
        summary = " ".join(diag.summary.split())
        note = quota_note(code, text, region)
        message = f"{where}: {code}: {summary}" + (f" ({note})" if note else "")
        hint = _hint(code) if not retryable else _quota_hint(code, region)
        return ProvisionError(message, failure, hint=hint)
    return None


_AUTH = {"AuthFailure", "UnauthorizedOperation", "InvalidClientTokenId",
         "SignatureDoesNotMatch", "ExpiredToken"}
_ACCOUNT = {"Blocked", "PendingVerification"}


def _hint(code: str) -> str:
    if code in _AUTH:
        return "check the AWS credentials and permissions (aws.profile in the config)"
    if code in _ACCOUNT:
        return ("the AWS account cannot launch resources yet (blocked or pending "
                "verification): see the account's status in the AWS console or ask AWS "
                "Support")
    if code == "TagLimitExceeded":
        return "too many tags on one resource (50 at most): use fewer labels in the task"
    return "the request itself was refused: check image_id, instance type, disk and ports"
