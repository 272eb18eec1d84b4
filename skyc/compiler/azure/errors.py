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
*CountLimitReached (PublicIP..., NICs)      region       yes       (network quotas: per region)
AzureSpotIsNotSupportedForThisVMSize        cloud        yes       (the size has no spot anywhere)
AzureSpotFeatureNotEnabledForSubscription   cloud        yes
TooManyRequests, RetryableError, 5xx codes  placement    yes       (the same placement again)
auth, subscription, registration            cloud        no        (the hint says the fix)
bad parameters (image, size, template)      cloud        no
==========================================  ===========  =========

``InvalidTemplateDeployment`` and ``ResourceDeploymentFailure`` only wrap the
real error: the inner code (or, when the wrapper names none, the inner
message) decides. So does the network provider's ``BadRequest``, whose message
is often the real error's JSON body, escaped (``{\\"error\\": {\\"code\\":
\\"PublicIPCountLimitReached\\", ...``): a code inside it wins over ``BadRequest``.

A spot VM evicted while it is still being created carries no error code: Azure
deletes it (eviction policy Delete) and later reads answer 404, so there is
nothing here to classify; the engine sees the resource vanish.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from skyc.errors import ProvisionError, ProvisionFailure, Scope
from skyc.model.diagnostics import Diagnostic
from skyc.model.plan import Placement

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
_ESCAPED_QUOTE = re.compile(r'\\+"')
_PUBLIC_IP_LIMIT = re.compile(r"Cannot create more than \d+ public IP addresses", re.I)
_ANY_QUOTA = re.compile(r"\bquota\b", re.I)


@dataclass(frozen=True)
class _Rule:
    scope: Scope
    retryable: bool
    what: str = ""          # a few words for the message, e.g. "family vCPU quota"
    hint: str | None = None


def error_codes(text: str) -> list[str]:
    """Every Azure error code in a diagnostic's text, outermost first (codes in a JSON
    body escaped inside a message too)."""
    plain = _ESCAPED_QUOTE.sub('"', text)
    found: list[tuple[int, str]] = []
    for pattern in _CODE_PATTERNS:
        found += [(m.start(), m.group(1)) for m in pattern.finditer(plain)]
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
            message: str = matches[-1].replace('\\"', '"')
            inner = _MESSAGE_PATTERNS[0].findall(_ESCAPED_QUOTE.sub('"', message))
            return " ".join((inner[-1] if inner else message).split())
    return " ".join(text.split())


def _inferred(text: str) -> str | None:
    """The code a wrapper's message stands for when it names no inner code."""
    if "is currently not available in location" in text:
        return "SkuNotAvailable"
    if _FAMILY_QUOTA.search(text) or _SPOT_QUOTA.search(text) or _REGIONAL_QUOTA.search(text):
        return "QuotaExceeded"
    if _PUBLIC_IP_LIMIT.search(text):
        return "PublicIPCountLimitReached"
    if "Allocation failed" in text:
        return "AllocationFailed"
    return None


def _region(placement: Placement | None) -> str:
    return (placement.region or "") if placement else ""


def _quota_rule(code: str, text: str, placement: Placement | None) -> _Rule:
    """A vCPU quota (family, regional or spot: each counts per region), or an
    OperationNotAllowed that is no quota at all."""
    region = _region(placement)
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
    if code == "QuotaExceeded" or _ANY_QUOTA.search(text):
        return _Rule("region", True, "quota",
                     f"request a quota increase{where} (portal: Quotas)")
    return _Rule("cloud", False, "operation not allowed", _BAD_REQUEST_HINT)


# What the network quotas count (Azure's networking limits are per region and
# subscription); other ``*CountLimitReached`` codes are named by their code.
_NETWORK_QUOTAS = {
    "PublicIPCountLimitReached": "public IP addresses",
    "StaticPublicIPCountLimitReached": "static public IP addresses",
    "DynamicPublicIPCountLimitReached": "dynamic public IP addresses",
}


def _network_quota_rule(code: str, text: str, placement: Placement | None) -> _Rule:
    """A network quota (public IPs, ...): per region and subscription, so another
    region has its own."""
    region = _region(placement)
    where = f" in {region}" if region else " in the region"
    thing = _NETWORK_QUOTAS.get(code, code.removesuffix("CountLimitReached"))
    return _Rule("region", True, f"quota of {thing}",
                 f"request more {thing}{where} (portal: Quotas, Networking), or delete "
                 "unused ones")


def _allocation_rule(code: str, text: str, placement: Placement | None) -> _Rule:
    in_zone = bool(placement and placement.zone) and "in this zone" in text
    return _Rule("zone" if in_zone else "region", True, "allocation failed")


def _sku_rule(code: str, text: str, placement: Placement | None) -> _Rule:
    if (placement and placement.use_spot) or "requested tier" in text:
        return _Rule("region", True, "no spot capacity in the region")
    zones = _ZONES.search(text)
    if zones and zones.group(1).strip():
        return _Rule("zone", True, "size not available in the zone")
    return _Rule("region", True, "size not available in the region")


def _registration_rule(code: str, text: str, placement: Placement | None) -> _Rule:
    namespace = _NAMESPACE.search(text)
    name = namespace.group(1) if namespace else "Microsoft.Compute"
    return _Rule("cloud", False, f"subscription not registered for {name}",
                 f"register the resource provider once: `az provider register "
                 f"--namespace {name}` (and Microsoft.Network), then retry")


# Transient: the same placement again (ARM's throttling and its retryable server errors).
_TRANSIENT = frozenset({"TooManyRequests", "RetryableError", "InternalServerError",
                        "ServiceUnavailable", "GatewayTimeout", "InternalOperationError"})

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
_AUTH_RULE = _Rule("cloud", False, "not authorized", _AUTH_HINT)
_BAD_REQUEST_RULE = _Rule("cloud", False, "the request was refused", _BAD_REQUEST_HINT)

# code -> its rule, where the code alone decides.
_FIXED: dict[str, _Rule] = {
    **dict.fromkeys(_CAPACITY_ZONE, _Rule("zone", True, "no capacity in the zone")),
    **dict.fromkeys(_CAPACITY_REGION, _Rule("region", True, "no capacity in the region")),
    **dict.fromkeys(_SPOT_NOWHERE, _Rule(
        "cloud", True, "no spot for this size or subscription",
        "set use_spot: false, or pick another accelerator or size")),
    **dict.fromkeys(_AUTH, _AUTH_RULE),
    **dict.fromkeys(_SUBSCRIPTION, _Rule("cloud", False, "subscription refused the request",
                                         _SUBSCRIPTION_HINT)),
    **dict.fromkeys(_MARKETPLACE, _Rule(
        "cloud", False, "marketplace image refused",
        "accept the image's terms once: `az vm image terms accept --urn "
        "<publisher:offer:sku:version>`, or choose another image_id")),
    **dict.fromkeys(_TRANSIENT, _Rule("placement", True, "throttled or a server error")),
    **dict.fromkeys(_BAD_REQUEST, _BAD_REQUEST_RULE),
}

_RuleFor = Callable[[str, str, Placement | None], _Rule]

# code -> how its rule is made, where the message or the placement decides too.
_BY_CODE: dict[str, _RuleFor] = {
    "AllocationFailed": _allocation_rule,
    "SkuNotAvailable": _sku_rule,
    "QuotaExceeded": _quota_rule,
    "OperationNotAllowed": _quota_rule,
    _REGISTRATION: _registration_rule,
}

# Families of codes, by how they end or begin (after the two tables above).
_BY_SUFFIX: tuple[tuple[str, _RuleFor], ...] = (("CountLimitReached", _network_quota_rule),)
_BY_PREFIX: tuple[tuple[str, _Rule], ...] = (("AADSTS", _AUTH_RULE),
                                             ("Invalid", _BAD_REQUEST_RULE))


def _rule(code: str, text: str, placement: Placement | None) -> _Rule | None:
    """The rule for one code: the fixed table, then the code's own function, then the
    family of codes it belongs to."""
    if code in _FIXED:
        return _FIXED[code]
    if code in _BY_CODE:
        return _BY_CODE[code](code, text, placement)
    made = next((make for suffix, make in _BY_SUFFIX if code.endswith(suffix)), None)
    if made is not None:
        return made(code, text, placement)
    return next((rule for prefix, rule in _BY_PREFIX if code.startswith(prefix)), None)


# Codes that say only that the request was bad: a more telling code in the same text
# (the JSON body inside their message) decides first.
_GENERIC = frozenset({"BadRequest"})


def _specific(codes: list[str], text: str, placement: Placement | None
              ) -> tuple[str, _Rule] | None:
    for code in codes:
        if code in _WRAPPERS or code in _GENERIC:
            continue
        rule = _rule(code, text, placement)
        if rule is not None:
            return code, rule
    return None


def _wrapped(codes: list[str], text: str, placement: Placement | None
             ) -> tuple[str, _Rule] | None:
    """A wrapper's (or a generic code's) error: what its message stands for, else the
    outer code, refused."""
    outer = [c for c in codes if c in _WRAPPERS or c in _GENERIC]
    if not outer:
        return None
    inner = _inferred(text)
    rule = _rule(inner, text, placement) if inner else None
    if inner and rule:
        return inner, rule
    generic = next((c for c in outer if c in _GENERIC), None)
    if generic is not None:
        return generic, _BAD_REQUEST_RULE
    return outer[0], _Rule("cloud", False, "the deployment was refused", _BAD_REQUEST_HINT)


def _pick(text: str, placement: Placement | None) -> tuple[str, _Rule] | None:
    codes = error_codes(text)
    picked = _specific(codes, text, placement) or _wrapped(codes, text, placement)
    if picked:
        return picked
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
