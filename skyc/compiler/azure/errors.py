"""Classify Azure provisioning failures from the engine's diagnostics.

Azure Resource Manager answers a refused request with an error ``code`` and a
``message`` (and, for template deployments, inner ``details``). The Pulumi
azure-native provider prints them as ``Status=409 Code="X" Message="..."``
(older releases: ``autorest/azure: Service returned an error. Status=409
Code="X" Message="..."``, or ``Code="X" Message="..."`` when a long-running
operation fails while polling); the Azure SDK's own text is ``ERROR CODE: X``
followed by the JSON body. All of these are read here.

What failover does with each code (scope to block, retryable elsewhere):

==========================================  ===========  =========
code                                        scope        retryable
==========================================  ===========  =========
ZonalAllocationFailed                       zone         yes
OverconstrainedZonalAllocationRequest       zone         yes
AllocationFailed                            zone/region  yes       (``in this zone`` in the message)
OverconstrainedAllocationRequest            region       yes
SkuNotAvailable                             zone/region  yes       (``zones '1'`` vs ``zones ''``)
SkuNotAvailable for a spot placement        region       yes       (no spot capacity in the region)
SpotPriceGreaterThanProvidedMaxPrice        region       yes
QuotaExceeded / OperationNotAllowed quota   region       yes       (family, regional or spot vCPUs)
AzureSpotIsNotSupportedForThisVMSize        cloud        yes       (the size has no spot anywhere)
AzureSpotFeatureNotEnabledForSubscription   cloud        yes
TooManyRequests, RetryableError, 5xx codes  placement    yes       (the same placement again)
auth, subscription, registration            cloud        no        (the hint says the fix)
bad parameters (image, size, template)      cloud        no
==========================================  ===========  =========

``InvalidTemplateDeployment`` and ``ResourceDeploymentFailure`` only wrap the
real error: the inner code (or, when the wrapper names none, the inner
message) decides.

A spot VM evicted while it is still being created carries no error code: Azure
deletes it (eviction policy Delete) and later reads answer 404, so there is
nothing here to classify; the engine sees the resource vanish.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from skyc.errors import ProvisionError, ProvisionFailure, Scope
from skyc.optimizer.plan import Placement
from skyc.stacks.diagnostics import Diagnostic

CLOUD = "azure"

# Codes that only wrap the error that matters.
_WRAPPERS = frozenset({
    "InvalidTemplateDeployment", "ResourceDeploymentFailure", "DeploymentFailed",
    "Conflict", "ResourceOperationFailure",
})

_CAPACITY_ZONE = frozenset({"ZonalAllocationFailed", "OverconstrainedZonalAllocationRequest"})
_CAPACITY_REGION = frozenset({"OverconstrainedAllocationRequest",
                              "SpotPriceGreaterThanProvidedMaxPrice"})
_SPOT_NOWHERE = frozenset({"AzureSpotIsNotSupportedForThisVMSize",
                           "AzureSpotFeatureNotEnabledForSubscription"})
_AUTH = frozenset({
    "AuthenticationFailed", "AuthorizationFailed", "LinkedAuthorizationFailed",
    "InvalidAuthenticationToken", "InvalidAuthenticationTokenTenant",
    "InvalidAuthenticationTokenAudience", "ExpiredAuthenticationToken",
    "AuthenticationFailedMissingToken", "Unauthorized", "Forbidden",
})
_SUBSCRIPTION = frozenset({
    "SubscriptionNotFound", "InvalidSubscriptionId", "ReadOnlyDisabledSubscription",
    "SubscriptionNotRegistered", "DisallowedOperation", "RequestDisallowedByPolicy",
})
_REGISTRATION = "MissingSubscriptionRegistration"
_MARKETPLACE = frozenset({
    "MarketplacePurchaseEligibilityFailed", "ResourcePurchaseValidationFailed",
    "VMMarketplaceInvalidInput",
})
_BAD_REQUEST = frozenset({
    "InvalidParameter", "InvalidRequestContent", "InvalidRequestFormat",
    "InvalidTemplate", "BadRequest", "ImageNotFound", "PlatformImageNotFound",
    "InvalidResourceReference", "LocationNotAvailableForResourceType",
    "NoRegisteredProviderFound", "EvictionPolicyCanBeSetOnlyOnAzureSpotVirtualMachines",
    "AzureSpotVMNotSupportedInAvailabilitySet", "MaxPriceValueInvalid",
    "PropertyChangeNotAllowed",
})
_QUOTA_CODES = frozenset({"QuotaExceeded", "OperationNotAllowed"})

_CODE_PATTERNS = (
    re.compile(r'\bCode="([A-Za-z][\w.]*)"'),          # azure-native, autorest
    re.compile(r"\bERROR CODE: ([A-Za-z][\w.]*)"),     # the Azure SDK's ResponseError
    re.compile(r'"code"\s*:\s*"([A-Za-z][\w.]*)"'),    # JSON bodies and their details
    re.compile(r"\bCode: ?([A-Za-z][\w.]*)"),          # az CLI / SDK summaries
)
# Innermost first: a JSON body's (or details') message, then the provider's.
_MESSAGE_PATTERNS = (
    re.compile(r'"message"\s*:\s*"((?:[^"\\]|\\.)*)"'),
    re.compile(r'Message="(.*?)"(?:\s+Details=|\s*$|\s*\n)', re.S),
    re.compile(r"\bMessage: ?(.+)"),
)
_ZONES = re.compile(r"zones? '([^']*)'")
_FAMILY_QUOTA = re.compile(r"approved (\w+) Cores quota")
_SPOT_QUOTA = re.compile(r"LowPriorityCores|Low ?Priority Cores|low-priority", re.I)
_REGIONAL_QUOTA = re.compile(r"Total Regional Cores quota|quota limits? of Core", re.I)
_NAMESPACE = re.compile(r"namespace '([\w.]+)'")
_AADSTS = re.compile(r"\b(AADSTS\d+)\b")
_CLI_LOGIN = re.compile(r"az login|Azure CLI", re.I)


@dataclass(frozen=True)
class _Rule:
    scope: Scope
    retryable: bool
    what: str = ""          # a few words for the message, e.g. "family vCPU quota"
    hint: str | None = None


def error_codes(text: str) -> list[str]:
    """Every Azure error code in a diagnostic's text, outermost first."""
    found: list[tuple[int, str]] = []
    for pattern in _CODE_PATTERNS:
        found += [(m.start(), m.group(1)) for m in pattern.finditer(text)]
    codes: list[str] = []
    for _, code in sorted(found):
        if code not in codes:
            codes.append(code)
    return codes


def error_message(text: str) -> str:
    """The innermost message Azure gave, on one line."""
    for pattern in _MESSAGE_PATTERNS:
        matches = pattern.findall(text)
        if matches:
            return " ".join(matches[-1].replace('\\"', '"').split())
    return " ".join(text.split())


def _inferred(text: str) -> str | None:
    """The code a wrapper's message stands for when it names no inner code."""
    if "is currently not available in location" in text:
        return "SkuNotAvailable"
    if _FAMILY_QUOTA.search(text) or _SPOT_QUOTA.search(text) or _REGIONAL_QUOTA.search(text):
        return "QuotaExceeded"
    if "Allocation failed" in text:
        return "AllocationFailed"
    return None


def _quota_rule(code: str, text: str, region: str) -> _Rule | None:
    where = f" in {region}" if region else ""
    if _SPOT_QUOTA.search(text):
        return _Rule("region", True, "spot (low-priority) vCPU quota",
                     f"request more spot vCPUs{where}: https://aka.ms/spot-quota")
    family = _FAMILY_QUOTA.search(text)
    if family and "Regional" not in family.group(1):
        return _Rule("region", True, f"{family.group(1)} vCPU quota",
                     f"request a {family.group(1)} quota increase{where} (portal: Quotas)")
    if _REGIONAL_QUOTA.search(text) or family:
        return _Rule("region", True, "regional vCPU quota",
                     f"request a regional vCPU quota increase{where} (portal: Quotas)")
    if code == "QuotaExceeded":
        return _Rule("region", True, "quota")
    return None


# Transient: the same placement again (ARM's throttling and its retryable server errors).
_TRANSIENT = frozenset({"TooManyRequests", "RetryableError", "InternalServerError",
                        "ServiceUnavailable", "GatewayTimeout", "InternalOperationError"})


def _rule(code: str, text: str, placement: Placement | None) -> _Rule | None:
    spot = bool(placement and placement.use_spot)
    zonal = bool(placement and placement.zone)
    region = (placement.region or "") if placement else ""
    if code in _CAPACITY_ZONE:
        return _Rule("zone", True, "no capacity in the zone")
    if code in _CAPACITY_REGION:
        return _Rule("region", True, "no capacity in the region")
    if code == "AllocationFailed":
        in_zone = zonal and "in this zone" in text
        return _Rule("zone" if in_zone else "region", True, "allocation failed")
    if code == "SkuNotAvailable":
        zones = _ZONES.search(text)
        if spot or "requested tier" in text:
            return _Rule("region", True, "no spot capacity in the region")
        if zones and zones.group(1).strip():
            return _Rule("zone", True, "size not available in the zone")
        return _Rule("region", True, "size not available in the region")
    if code in _QUOTA_CODES:
        quota = _quota_rule(code, text, region)
        if quota is not None:
            return quota
        return _Rule("cloud", False, "operation not allowed", _BAD_REQUEST_HINT)
    if code in _SPOT_NOWHERE:
        return _Rule("cloud", True, "no spot for this size or subscription",
                     "set use_spot: false, or pick another accelerator or size")
    if code in _AUTH or code.startswith("AADSTS"):
        return _Rule("cloud", False, "not authorized", _AUTH_HINT)
    if code in _SUBSCRIPTION:
        return _Rule("cloud", False, "subscription refused the request", _SUBSCRIPTION_HINT)
    if code == _REGISTRATION:
        namespace = _NAMESPACE.search(text)
        name = namespace.group(1) if namespace else "Microsoft.Compute"
        return _Rule("cloud", False, f"subscription not registered for {name}",
                     f"register the resource provider once: `az provider register "
                     f"--namespace {name}` (and Microsoft.Network), then retry")
    if code in _MARKETPLACE:
        return _Rule("cloud", False, "marketplace image refused",
                     "accept the image's terms once: `az vm image terms accept --urn "
                     "<publisher:offer:sku:version>`, or choose another image_id")
    if code in _TRANSIENT:
        return _Rule("placement", True, "throttled or a server error")
    if code in _BAD_REQUEST or code.startswith("Invalid"):
        return _Rule("cloud", False, "the request was refused", _BAD_REQUEST_HINT)
    return None


_AUTH_HINT = (
    "check the Azure login: run `az login` (and `az account set --subscription <id>`), "
    "or set AZURE_CLIENT_ID, AZURE_TENANT_ID and AZURE_CLIENT_SECRET for a service "
    "principal with the Contributor role on the subscription"
)
_SUBSCRIPTION_HINT = (
    "check the subscription: azure.subscription_id in the config or AZURE_SUBSCRIPTION_ID "
    "must name an enabled subscription the login can use (`az account list`)"
)
_BAD_REQUEST_HINT = (
    "the request itself was refused: check image_id, the instance type, disk and ports"
)


def _pick(text: str, placement: Placement | None) -> tuple[str, _Rule] | None:
    codes = error_codes(text)
    for code in codes:
        if code in _WRAPPERS:
            continue
        rule = _rule(code, text, placement)
        if rule is not None:
            return code, rule
    if any(c in _WRAPPERS for c in codes):
        inner = _inferred(text)
        rule = _rule(inner, text, placement) if inner else None
        if inner and rule:
            return inner, rule
        wrapper = next(c for c in codes if c in _WRAPPERS)
        return wrapper, _Rule("cloud", False, "the deployment was refused", _BAD_REQUEST_HINT)
    token = _AADSTS.search(text)
    if token:
        return token.group(1), _Rule("cloud", False, "sign-in failed", _AUTH_HINT)
    if not codes and _CLI_LOGIN.search(text) and re.search(r"log ?in|credential", text, re.I):
        return "AzureCLILogin", _Rule("cloud", False, "no usable Azure login", _AUTH_HINT)
    return None


def classify(
    diagnostics: Sequence[Diagnostic], placement: Placement | None
) -> ProvisionError | None:
    """The first classifiable error among the diagnostics, or None."""
    for diag in diagnostics:
        if diag.severity != "error":
            continue
        text = diag.text
        picked = _pick(text, placement)
        if picked is None:
            continue
        code, rule = picked
        failure = ProvisionFailure(
            code=code,
            scope=rule.scope,
            retryable=rule.retryable,
            cloud=CLOUD,
            region=placement.region if placement else None,
            zone=placement.zone if placement else None,
            resource=diag.address,
            raw=text,
        )
        where = placement.infra if placement else CLOUD
        message = f"{where}: {code} ({rule.what}): {error_message(text)}"
        return ProvisionError(message, failure, hint=rule.hint)
    return None
