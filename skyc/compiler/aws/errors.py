"""Classify AWS provisioning failures from the engine's neutral diagnostics.

Both engines carry the EC2 API's error text: terraform's provider prints
``api error <Code>: <message>``, Pulumi's (the same provider, bridged) prints
the same inside the engine's error event, and the AWS SDK's plain form is
``<Code>: <message>``. The code decides, never the engine.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from skyc.errors import ProvisionError, ProvisionFailure, Scope
from skyc.optimizer.plan import Placement
from skyc.stacks.diagnostics import Diagnostic

# code -> (scope to block, retryable elsewhere)
_CODES: dict[str, tuple[Scope, bool]] = {
    "InsufficientInstanceCapacity": ("zone", True),
    "InsufficientHostCapacity": ("zone", True),
    "InsufficientCapacityOnHost": ("zone", True),
    "InsufficientReservedInstanceCapacity": ("zone", True),
    "Unsupported": ("zone", True),
    "SpotMaxPriceTooLow": ("zone", True),
    "VcpuLimitExceeded": ("region", True),
    "MaxSpotInstanceCountExceeded": ("region", True),
    "InstanceLimitExceeded": ("region", True),
    "OptInRequired": ("region", True),
    "AuthFailure": ("cloud", False),
    "UnauthorizedOperation": ("cloud", False),
    "InvalidClientTokenId": ("cloud", False),
    "SignatureDoesNotMatch": ("cloud", False),
    "ExpiredToken": ("cloud", False),
    "MissingParameter": ("cloud", False),
    "ValidationError": ("cloud", False),
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

_API_ERROR = re.compile(r"api error ([A-Za-z][\w.]*)")
_STATUS = re.compile(r"\b([A-Z][A-Za-z]+(?:\.[A-Za-z]+)?): ")


def error_code(text: str) -> str | None:
    """The AWS error code in a diagnostic's text, e.g. ``InsufficientInstanceCapacity``."""
    match = _API_ERROR.search(text)
    if match:
        return match.group(1)
    for match in _STATUS.finditer(text):
        code = match.group(1)
        if code in _CODES or code.startswith("Invalid"):
            return code
    return None


def _rule(code: str) -> tuple[Scope, bool] | None:
    if code in _CODES:
        return _CODES[code]
    if code.startswith("Invalid") or code.startswith("Malformed"):
        return ("cloud", False)  # a bad parameter: another placement will not fix it
    return None


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
        failure = ProvisionFailure(
            code=code,
            scope=scope,
            retryable=retryable,
            cloud="aws",
            region=placement.region if placement else None,
            zone=placement.zone if placement else None,
            resource=diag.address,
            raw=text,
        )
        where = placement.infra if placement else "aws"
        summary = " ".join(diag.summary.split())
        message = f"{where}: {code}: {summary}"
        hint = None if retryable else _hint(code)
        return ProvisionError(message, failure, hint=hint)
    return None


_AUTH = {"AuthFailure", "UnauthorizedOperation", "InvalidClientTokenId",
         "SignatureDoesNotMatch", "ExpiredToken"}


def _hint(code: str) -> str:
    if code in _AUTH:
        return "check the AWS credentials and permissions (aws.profile in the config)"
    return "the request itself was refused: check image_id, instance type, disk and ports"
