"""Classify GCP provisioning failures from the engine's diagnostics.

pulumi_gcp is bridged from the Terraform google provider, so both engines print
the provider's text. Compute Engine reports a failed insert in two ways:

- the insert call itself is refused, and the provider prints the API error as
  ``Error creating instance: googleapi: Error 403: <message>, <reason>`` (with
  ``Details:`` / ``More details:`` blocks on newer APIs);
- the insert is accepted and its operation fails: the provider prints
  ``Error waiting for instance to create: <message>`` followed by the quota
  metric (``metric name = ...``) or GCP's localized explanation. The error
  code (``ZONE_RESOURCE_POOL_EXHAUSTED``, ``QUOTA_EXCEEDED``) is then not in
  the text at all, only its message.

A quota's place is in its message (``Limit: 5.0 globally``), else in the metric
lines (``dimensions = map[global:global]``) or the ErrorInfo details
(``"quota_location"``); where nothing says, the project-wide metrics (the
project's networks, subnetworks, firewall rules and routes: every region counts
against them) block GCP and the others the region.

Cloud TPU operations fail as ``Error waiting to create Vm: Error waiting for
Creating Vm: Error code 8, message: There is no more capacity in the zone
"us-central2-b"; ...`` (gRPC code 8 is RESOURCE_EXHAUSTED).

What failover does with each (scope to block, retryable elsewhere):

==============================================  ===========  =========
what GCP said                                   scope        retryable
==============================================  ===========  =========
zone out of resources / stockout (VM or TPU)    zone         yes
machine or accelerator type not in the zone     zone         yes
the region out of resources                     region       yes
quota ``... in region R`` (GPUs, CPUs, TPUs)    region       yes
TPU quota ``... in zone Z``                     zone         yes
quota ``... globally`` (GPUS_ALL_REGIONS, ...)  cloud        yes
project-wide quota named without a place        cloud        yes  (NETWORKS, FIREWALLS, ...)
API not enabled                                 cloud        no   (hint: gcloud services enable)
permission denied                               cloud        no   (hint: the role to grant)
no or expired credentials                       cloud        no   (hint: gcloud auth)
rate limit, server error (429, 5xx)             placement    yes  (the same placement again)
other bad requests (image, disk, field value)   cloud        no
==============================================  ===========  =========
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from skyc.errors import ProvisionError, ProvisionFailure, Scope
from skyc.model.diagnostics import Diagnostic
from skyc.model.plan import Placement

CLOUD = "gcp"


@dataclass(frozen=True)
class _Rule:
    code: str
    scope: Scope
    retryable: bool
    hint: str | None = None


_QUOTA = re.compile(
    r"Quota (?:limit )?'(?P<metric>[\w-]+)' (?:has been )?(?:exceeded|exhausted)[.,]?\s+"
    r"Limit:? (?P<limit>[\d.]+)(?:\s+(?P<where>globally|in region [\w-]+|in zone [\w-]+))?"
)
# The quota's metric and location where the message itself names none: the operation
# error's ``metric name = compute.googleapis.com/networks`` / ``dimensions = map[...]``
# lines, or the ErrorInfo details of a refused call (``"quota_metric": ...``,
# ``"quota_location": ...``; a JSON body, perhaps escaped inside a string).
_METRIC = re.compile(r"(?:quota_metric\W+|metric name = )[\w.-]+/(?P<metric>\w+)")
_DIMENSIONS = re.compile(
    r"dimensions = map\[[^\]]*?\b(?P<key>global|region|zone):(?P<value>[\w-]+)")
_LOCATION = re.compile(r"quota_location\W+(?P<value>[\w-]+)")
_ZONE_NAME = re.compile(r"^[a-z]+-[a-z]+\d+-[a-z]$")
_ZONE_EXHAUSTED = (
    re.compile(r"does not have enough resources available to fulfill the request"),
    re.compile(r"\bZONE_RESOURCE_POOL_EXHAUSTED(?:_WITH_DETAILS)?\b"),
    re.compile(r"VM instance .{0,120}is currently unavailable in the [\w-]+ zone", re.S),
    re.compile(r"\bstate:STOCKOUT\b|\bGCE_STOCKOUT\b|\bresource pool exhausted\b", re.I),
)
_WITH_DETAILS = re.compile(
    r"ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS|is currently unavailable in the [\w-]+ zone"
    r"|is not supported in the [\w-]+ zone"
)
_TPU_CAPACITY = re.compile(
    r"There is no more capacity in the zone|Insufficient reserved capacity"
    r"|Error code 8, message: .*(?:capacity|stockout)", re.I
)
_REGION_EXHAUSTED = re.compile(r"\bREGION_RESOURCE_POOL_EXHAUSTED\b|The region '[^']+' does not "
                               r"have enough resources")
_NOT_IN_ZONE = (
    re.compile(r"Machine type with name '[\w-]+' does not exist in zone"),
    re.compile(r"/zones/[\w-]+/(?:machineTypes|acceleratorTypes)/[\w-]+' was not found"),
    re.compile(r"[Aa]ccelerator type '?[\w-]+'? (?:is )?not (?:available|supported|found) in"
               r" (?:the )?zone"),
    re.compile(r"\bUNSUPPORTED_OPERATION\b"),
)
_SERVICE_DISABLED = re.compile(
    r"(?P<api>[\w .]+?) API has not been used in project (?P<project>[\w-]+) before or it is "
    r"disabled|\bSERVICE_DISABLED\b|\baccessNotConfigured\b"
)
_SERVICE_NAME = re.compile(r"apis/api/(?P<service>[\w.]+)/overview\?project=(?P<project>[\w-]+)")
_PERMISSION = re.compile(
    r"Required '(?P<perm>[\w.]+)' permission|\bIAM_PERMISSION_DENIED\b|\bPERMISSION_DENIED\b"
    r"|Permission '(?P<perm2>[\w.]+)' denied|does not have [\w.]+ access|, forbidden\b"
)
_AUTH = re.compile(
    r"could not find default credentials|oauth2: cannot fetch token|invalid_grant"
    r"|Request had invalid authentication credentials|\bUNAUTHENTICATED\b"
    r"|reauthentication (?:is )?required|Error 401\b", re.I
)
_BAD_REQUEST = re.compile(
    r"googleapi: Error 400\b|Invalid value for field|\binvalid\b$|Requested disk size cannot be "
    r"smaller than the image size|The resource '[^']*/(?:images|global/images)/[^']*' was not found"
    r"|\bINVALID_ARGUMENT\b|Error code 3, message:", re.M
)
_URN = re.compile(r"urn:pulumi:[^\s:]*::[^\s:]*::[^\s]*?::[\w.-]+")
# The Pulumi bridge's wrapping of a provider error on one line.
_BRIDGE = re.compile(r"^\s*sdk-v2/provider2?\.go:\d+: sdk\.helper_schema: |: provider=[\w.@-]+$")


# Project-wide quotas: every region of the project counts against the same limit, so
# another region cannot help and failover leaves GCP. (The message usually says
# "globally"; these are for the texts that name the metric alone.)
GLOBAL_METRICS = frozenset({
    "NETWORKS", "SUBNETWORKS", "FIREWALLS", "ROUTES", "ROUTERS", "GLOBAL_INTERNAL_ADDRESSES",
    "STATIC_BYOIP_ADDRESSES", "SECURITY_POLICIES", "IMAGES", "SNAPSHOTS",
    "INSTANCE_TEMPLATES", "GPUS_ALL_REGIONS", "CPUS_ALL_REGIONS",
})
_NETWORK_METRICS = frozenset({"NETWORKS", "SUBNETWORKS", "FIREWALLS", "ROUTES", "ROUTERS"})


def _quota_place(found: re.Match[str] | None, text: str) -> tuple[Scope | None, str]:
    """Where a quota counts, as its text says (None: it does not say), and those words."""
    where = found.group("where") if found else None
    if where:
        scope: Scope = ("cloud" if where == "globally"
                        else "zone" if where.startswith("in zone") else "region")
        return scope, where
    dims = _DIMENSIONS.search(text)
    loc = _LOCATION.search(text)
    value = dims.group("value") if dims else loc.group("value") if loc else None
    key = dims.group("key") if dims else None
    if value is None:
        return None, ""
    if key == "global" or value == "global":
        return "cloud", "globally"
    if key == "zone" or _ZONE_NAME.match(value):
        return "zone", f"in zone {value}"
    return "region", f"in region {value}"


def _quota_metric(found: re.Match[str] | None, text: str) -> str | None:
    if found:
        return found.group("metric")
    named = _METRIC.search(text)
    return named.group("metric").upper() if named else None


def _quota_rule(text: str) -> tuple[_Rule, str] | None:
    """A quota error: blocked where the quota counts (the project's global quotas: GCP)."""
    found = _QUOTA.search(text)
    if found is None and "QUOTA_EXCEEDED" not in text and "quotaExceeded" not in text:
        return None
    metric = _quota_metric(found, text)
    scope, where = _quota_place(found, text)
    if scope is None:  # the text names no place: the metric's own
        scope = "cloud" if metric in GLOBAL_METRICS else "region"
        where = "(project-wide)" if scope == "cloud" else ""
    what = " ".join(w for w in ("quota", metric, where) if w) if metric else "a quota"
    return _Rule("QUOTA_EXCEEDED", scope, True, _quota_hint(metric)), what


def _quota_hint(metric: str | None) -> str:
    if metric in _NETWORK_METRICS:
        return (f"request more {metric} quota for the project: "
                f"https://console.cloud.google.com/iam-admin/quotas?metric="
                f"compute.googleapis.com/{metric.lower()} (it counts every region of the "
                "project), or remove the project's unused VPC networks and firewall rules")
    named = f" ({metric})" if metric else ""
    return (f"request more quota{named}: https://console.cloud.google.com/iam-admin/quotas "
            "(GPU quotas are per region and per model, e.g. NVIDIA_A100_GPUS; spot VMs use "
            "the PREEMPTIBLE_ ones)")


# Transient: the same placement again. The API's rate limits (403 or 429 with reason
# rateLimitExceeded / userRateLimitExceeded) and its server errors (500, 502, 503,
# backendError, internalError).
_RATE_LIMITED = re.compile(
    r"\b(?:userRateLimitExceeded|rateLimitExceeded)\b|googleapi: Error 429\b")
_SERVER_ERROR = re.compile(
    r"\b(?:backendError|internalError)\b|googleapi: Error (?:500|502|503|504)\b")


def _service_disabled(text: str) -> tuple[_Rule, str] | None:
    api = _SERVICE_DISABLED.search(text)
    if api is None:
        return None
    service = _SERVICE_NAME.search(text)
    name = service.group("service") if service else "compute.googleapis.com"
    project = (service.group("project") if service else api.group("project")) or "<project>"
    hint = f"enable the API, then retry: gcloud services enable {name} --project {project}"
    return _Rule("SERVICE_DISABLED", "cloud", False, hint), f"the {name} API is not enabled"


def _unauthenticated(text: str) -> tuple[_Rule, str] | None:
    if not _AUTH.search(text):
        return None
    return _Rule("UNAUTHENTICATED", "cloud", False,
                 "log in again: gcloud auth application-default login (or point "
                 "GOOGLE_APPLICATION_CREDENTIALS at a service account key); skyc check "
                 "says what it found"), "no usable credentials"


def _permission(text: str) -> tuple[_Rule, str] | None:
    perm = _PERMISSION.search(text)
    if perm is None:
        return None
    name = perm.group("perm") or perm.group("perm2")
    what = f"permission {name} denied" if name else "permission denied"
    return _Rule("PERMISSION_DENIED", "cloud", False,
                 f"grant the account {'the ' + name + ' permission' if name else 'access'} "
                 "(roles/compute.instanceAdmin.v1 and roles/iam.serviceAccountUser cover VMs; "
                 "roles/tpu.admin covers TPU VMs), or use another project (gcp.project)"), what


def _capacity(text: str) -> tuple[_Rule, str] | None:
    if _TPU_CAPACITY.search(text):
        return _Rule("RESOURCE_EXHAUSTED", "zone", True), "no TPU capacity in the zone"
    if _REGION_EXHAUSTED.search(text):
        rule = _Rule("REGION_RESOURCE_POOL_EXHAUSTED", "region", True)
        return rule, "the region is out of resources"
    if any(p.search(text) for p in _ZONE_EXHAUSTED):
        code = ("ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS" if _WITH_DETAILS.search(text)
                else "ZONE_RESOURCE_POOL_EXHAUSTED")
        return _Rule(code, "zone", True), "the zone is out of resources"
    if any(p.search(text) for p in _NOT_IN_ZONE):
        return _Rule("RESOURCE_NOT_FOUND", "zone", True), "the type is not offered in the zone"
    return None


def _transient(text: str) -> tuple[_Rule, str] | None:
    if _RATE_LIMITED.search(text):
        return _Rule("RATE_LIMITED", "placement", True), "the API's rate limit"
    if _SERVER_ERROR.search(text):
        return _Rule("BACKEND_ERROR", "placement", True), "a server error of the API"
    return None


def _bad_request(text: str) -> tuple[_Rule, str] | None:
    if not _BAD_REQUEST.search(text):
        return None
    return _Rule("INVALID", "cloud", False,
                 "the request itself was refused: check image_id, disk_size, the instance "
                 "type and the accelerator"), "the request was refused"


# In order: the first that matches decides.
_RULES: tuple[Callable[[str], tuple[_Rule, str] | None], ...] = (
    _service_disabled, _unauthenticated, _permission, _quota_rule, _capacity, _transient,
    _bad_request,
)


def _rule(text: str) -> tuple[_Rule, str] | None:
    """The rule for one diagnostic's text, and a few words of what GCP said."""
    return next((found for match in _RULES if (found := match(text)) is not None), None)


def _resource(diag: Diagnostic) -> str | None:
    if diag.address:
        return diag.address
    found = _URN.search(diag.text)
    return found.group(0) if found else None


def _gcp_message(text: str) -> str:
    """The cloud's own words: the innermost ``* ...`` item, else the first line, on one line."""
    items = [line.strip()[2:] for line in text.splitlines() if line.strip().startswith("* ")]
    inner = [i for i in items if not i.startswith("creating urn:")]
    line = inner[-1] if inner else next((s for s in text.splitlines() if s.strip()), "")
    return " ".join(_BRIDGE.sub("", line).split())[:300]


def _by_resource(diagnostics: Sequence[Diagnostic]) -> list[tuple[Diagnostic, str]]:
    """Each failing resource once, with the text of all its error diagnostics.

    Pulumi reports one failure twice (the provider's one-line form and the
    engine's full form, which alone holds GCP's details): read them together.
    """
    texts: dict[str, list[str]] = {}
    first: dict[str, Diagnostic] = {}
    out: list[tuple[Diagnostic, str]] = []
    for diag in diagnostics:
        if diag.severity != "error":
            continue
        if diag.address is None:
            out.append((diag, diag.text))
            continue
        if diag.address not in first:
            first[diag.address] = diag
            texts[diag.address] = []
            out.append((diag, ""))
        texts[diag.address].append(diag.text)
    return [(d, "\n".join(texts[d.address]) if d.address in texts else t) for d, t in out]


def classify(diagnostics: Sequence[Diagnostic], placement: Placement | None
             ) -> ProvisionError | None:
    """The first classifiable error among the diagnostics, or None."""
    for diag, text in _by_resource(diagnostics):
        found = _rule(text)
        if found is None:
            continue
        rule, what = found
        failure = ProvisionFailure(
            code=rule.code, scope=rule.scope, retryable=rule.retryable, cloud=CLOUD,
            region=placement.region if placement else None,
            zone=placement.zone if placement else None,
            resource=_resource(diag), raw=text,
        )
        where = placement.infra if placement else CLOUD
        message = f"{where}: {rule.code}: {what}: {_gcp_message(text)}"
        return ProvisionError(message, failure, hint=rule.hint)
    return None
