"""Classifying GCP provisioning failures from Pulumi engine events.

The fixtures (tests/fixtures/errors/gcp/<CODE>[.<variant>].jsonl, see the
README there) hold GCP's error texts in the events a failed ``pulumi up``
emits; each file's name before the first dot is the expected code. The
events become neutral Diagnostics here the simple way (summary = first line,
detail = the rest, address = the URN): the classifier reads only the text
and the address, so how an engine splits the text does not matter.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skyc.compiler.gcp.errors import classify
from skyc.errors import ProvisionError
from skyc.model.diagnostics import Diagnostic
from skyc.model.plan import Placement

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "errors" / "gcp"
RECORDED = sorted(FIXTURES.glob("*.jsonl"))

# file stem -> (scope to block, retryable elsewhere)
EXPECTED: dict[str, tuple[str, bool]] = {
    "ZONE_RESOURCE_POOL_EXHAUSTED": ("zone", True),
    "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS": ("zone", True),
    "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS.spot-stockout": ("zone", True),
    "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS.unsupported-config": ("zone", True),
    "RESOURCE_EXHAUSTED.tpu": ("zone", True),
    "RESOURCE_EXHAUSTED.tpu-reserved": ("zone", True),
    "QUOTA_EXCEEDED.nvidia-a100": ("region", True),
    "QUOTA_EXCEEDED.preemptible-h100": ("region", True),
    "QUOTA_EXCEEDED.cpus": ("region", True),
    "QUOTA_EXCEEDED.insert": ("region", True),
    "QUOTA_EXCEEDED.gpus-all-regions": ("cloud", True),
    "QUOTA_EXCEEDED.tpu-zone": ("zone", True),
    "RESOURCE_NOT_FOUND.machine-type": ("zone", True),
    "RESOURCE_NOT_FOUND.accelerator": ("zone", True),
    "SERVICE_DISABLED": ("cloud", False),
    "SERVICE_DISABLED.tpu": ("cloud", False),
    "PERMISSION_DENIED": ("cloud", False),
    "UNAUTHENTICATED": ("cloud", False),
    "INVALID.disk-size": ("cloud", False),
}

PLACEMENT = Placement(cloud="gcp", region="us-central1", zone="us-central1-a",
                      instance_type="a2-highgpu-8g", accelerators={"A100": 8}, hourly_cost=20.0)


def diagnostics(path: Path) -> list[Diagnostic]:
    out = []
    for line in path.read_text().splitlines():
        event = json.loads(line).get("diagnosticEvent")
        if not event or event.get("severity") != "error":
            continue
        summary, _, detail = event["message"].strip("\n").partition("\n")
        out.append(Diagnostic(engine="pulumi", summary=summary, detail=detail,
                              address=event.get("urn")))
    return out


def test_every_fixture_has_an_expectation() -> None:
    assert RECORDED, f"no fixtures in {FIXTURES}"
    assert {p.stem for p in RECORDED} == set(EXPECTED)


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.stem)
def test_fixture_is_classified(path: Path) -> None:
    error = classify(diagnostics(path), PLACEMENT)
    assert isinstance(error, ProvisionError)
    assert error.code == path.stem.split(".")[0]
    assert (error.scope, error.retryable) == EXPECTED[path.stem]
    assert error.failure.cloud == "gcp"
    assert (error.failure.region, error.failure.zone) == ("us-central1", "us-central1-a")
    assert error.failure.resource is not None and error.failure.resource.startswith("urn:pulumi:")
    assert error.message.startswith(f"gcp/us-central1/us-central1-a: {error.code}: ")
    assert "sdk-v2/provider2.go" not in error.message  # the cloud's words, not the bridge's
    if not error.retryable:
        assert error.hint


def test_only_the_stack_summary_is_not_classified() -> None:
    stack = Diagnostic(engine="pulumi", summary="update failed",
                       address="urn:pulumi:train::skyc::pulumi:pulumi:Stack::skyc-train")
    assert classify([stack], PLACEMENT) is None
    assert classify([], PLACEMENT) is None
    unknown = Diagnostic(engine="pulumi", summary="1 error occurred:",
                         detail="\t* something nobody has seen before")
    assert classify([stack, unknown], PLACEMENT) is None


def test_warnings_are_not_errors() -> None:
    text = ("The zone 'projects/p/zones/z' does not have enough resources available to "
            "fulfill the request.")
    assert classify([Diagnostic(engine="pulumi", summary=text, severity="warning")], None) is None


def test_quota_message_names_the_metric_and_where() -> None:
    error = classify(diagnostics(FIXTURES / "QUOTA_EXCEEDED.preemptible-h100.jsonl"), PLACEMENT)
    assert error is not None
    assert "quota PREEMPTIBLE_NVIDIA_H100_GPUS in region europe-north1" in error.message
    assert error.hint and "PREEMPTIBLE_" in error.hint


def test_api_not_enabled_hint_names_the_api_and_project() -> None:
    for stem, api in (("SERVICE_DISABLED", "compute.googleapis.com"),
                      ("SERVICE_DISABLED.tpu", "tpu.googleapis.com")):
        error = classify(diagnostics(FIXTURES / f"{stem}.jsonl"), PLACEMENT)
        assert error is not None and error.hint is not None
        assert f"gcloud services enable {api} --project 123456789012" in error.hint


def test_permission_hint_names_the_permission() -> None:
    error = classify(diagnostics(FIXTURES / "PERMISSION_DENIED.jsonl"), PLACEMENT)
    assert error is not None and error.hint is not None
    assert "compute.instances.create" in error.message
    assert "compute.instances.create" in error.hint


def test_without_placement_and_address_the_urn_comes_from_the_text() -> None:
    urn = "urn:pulumi:train::skyc::gcp:compute/instance:Instance::train-1"
    diag = Diagnostic(engine="pulumi", summary="1 error occurred:", detail=(
        f"\t* creating {urn}: 1 error occurred:\n\t* Error waiting for instance to create: "
        "The zone 'projects/p/zones/us-east4-a' does not have enough resources available to "
        "fulfill the request.  Try a different zone, or try again later."))
    error = classify([diag], None)
    assert error is not None and error.code == "ZONE_RESOURCE_POOL_EXHAUSTED"
    assert error.failure.resource == urn and error.failure.zone is None
    assert error.message.startswith("gcp: ZONE_RESOURCE_POOL_EXHAUSTED: ")


@pytest.mark.parametrize(("text", "code"), [
    # the codes themselves, as gcloud and the operation JSON print them
    ("code: ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS",
     "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS"),
    ("ZONE_RESOURCE_POOL_EXHAUSTED: The zone is out", "ZONE_RESOURCE_POOL_EXHAUSTED"),
    ("Code: QUOTA_EXCEEDED", "QUOTA_EXCEEDED"),
    ("Error code 8, message: There is no more capacity in the zone \"europe-west4-a\"",
     "RESOURCE_EXHAUSTED"),
    ("Instance 'x' creation failed: [GCE_STOCKOUT]", "ZONE_RESOURCE_POOL_EXHAUSTED"),
])
def test_codes_in_other_shapes(text: str, code: str) -> None:
    error = classify([Diagnostic(engine="pulumi", summary=text)], PLACEMENT)
    assert error is not None and error.code == code


@pytest.mark.parametrize(("text", "code"), [
    ("Error creating instance: googleapi: Error 403: Rate Limit Exceeded, rateLimitExceeded",
     "RATE_LIMITED"),
    ("Error creating instance: googleapi: Error 429: Quota exceeded for quota metric "
     "'Queries' and limit 'Queries per minute', userRateLimitExceeded", "RATE_LIMITED"),
    ("Error creating instance: googleapi: Error 503: Internal error. Please try again or "
     "contact Google Support., backendError", "BACKEND_ERROR"),
])
def test_rate_limits_and_server_errors_try_the_same_placement_again(text: str,
                                                                    code: str) -> None:
    # The provider's form of the API's errors (``googleapi: Error <status>: ..., <reason>``).
    error = classify([Diagnostic(engine="terraform", summary=text)], PLACEMENT)
    assert error is not None and error.code == code
    assert (error.scope, error.retryable) == ("placement", True)


# The project's network quotas count every region of the project (GCP's "global"
# quotas): another region hits the same limit, so failover leaves GCP. The first two
# texts are the provider's two forms (a failed operation, a refused insert) and the
# third gcloud's, as GCP words them; the others are GCP's error shapes (the metric
# lines of an operation error, a JSON body's ErrorInfo details) with the message
# left out, so that only the metric or the details name the place.
_NETWORK_OPERATION = (
    "Error waiting to create Network: Error waiting for Creating Network: Quota 'NETWORKS' "
    "exceeded.  Limit: 15.0 globally.\n\tmetric name = compute.googleapis.com/networks\n"
    "\tlimit name = NETWORKS-per-project\n\tdimensions = map[global:global]")
_FIREWALL_INSERT = (
    "Error creating Firewall: googleapi: Error 403: Quota 'FIREWALLS' exceeded.  Limit: 200.0 "
    "globally., quotaExceeded")
_SUBNETWORK_JSON = (
    'Error creating Subnetwork: googleapi: Error 403: {"error": {"code": 403, "errors": '
    '[{"domain": "usageLimits", "reason": "quotaExceeded"}], "details": [{"@type": '
    '"type.googleapis.com/google.rpc.ErrorInfo", "reason": "QUOTA_EXCEEDED", "domain": '
    '"compute.googleapis.com", "metadata": {"quota_metric": '
    '"compute.googleapis.com/subnetworks", "quota_limit": "SUBNETWORKS-per-project", '
    '"quota_limit_value": "100"}}]}}')
_NETWORK_GCLOUD = "Could not fetch resource:\n - Quota 'NETWORKS' exceeded. Limit: 75.0"
_ROUTES_METRIC_ONLY = (
    "Error waiting to create Route: Error waiting for Creating Route: QUOTA_EXCEEDED\n"
    "\tmetric name = compute.googleapis.com/routes\n\tlimit name = ROUTES-per-project")
_ADDRESSES_IN_REGION = (
    "Error waiting for instance to create: Quota 'IN_USE_ADDRESSES' exceeded.  Limit: 8.0 in "
    "region us-central1.\n\tmetric name = compute.googleapis.com/in_use_addresses\n"
    "\tdimensions = map[region:us-central1]")
_CPUS_BY_LOCATION = (
    'googleapi: Error 403: {"error": {"code": 403, "errors": [{"domain": "usageLimits", '
    '"reason": "quotaExceeded"}], "details": [{"@type": '
    '"type.googleapis.com/google.rpc.ErrorInfo", "reason": "QUOTA_EXCEEDED", "metadata": '
    '{"quota_metric": "compute.googleapis.com/cpus", "quota_location": "us-central1"}}]}}')


@pytest.mark.parametrize(("text", "scope", "named"), [
    (_NETWORK_OPERATION, "cloud", "quota NETWORKS globally"),
    (_FIREWALL_INSERT, "cloud", "quota FIREWALLS globally"),
    (_SUBNETWORK_JSON, "cloud", "quota SUBNETWORKS (project-wide)"),
    (_NETWORK_GCLOUD, "cloud", "quota NETWORKS (project-wide)"),
    (_ROUTES_METRIC_ONLY, "cloud", "quota ROUTES (project-wide)"),
    (_ADDRESSES_IN_REGION, "region", "quota IN_USE_ADDRESSES in region us-central1"),
    (_CPUS_BY_LOCATION, "region", "quota CPUS in region us-central1"),
], ids=["network-operation", "firewall-insert", "subnetwork-json", "network-gcloud",
        "routes-metric-only", "addresses-in-region", "cpus-by-location"])
def test_quotas_block_where_they_count(text: str, scope: str, named: str) -> None:
    error = classify([Diagnostic(engine="pulumi", summary=text, address="urn:x")], PLACEMENT)
    assert error is not None
    assert (error.code, error.scope, error.retryable) == ("QUOTA_EXCEEDED", scope, True)
    assert f"QUOTA_EXCEEDED: {named}: " in error.message


def test_a_network_quota_hint_says_it_counts_the_whole_project() -> None:
    diag = Diagnostic(engine="terraform", summary=_NETWORK_OPERATION,
                      address="google_compute_network.main")
    error = classify([diag], PLACEMENT)
    assert error is not None and error.hint is not None
    assert "metric=compute.googleapis.com/networks" in error.hint
    assert "every region of the project" in error.hint
    gpus = classify(diagnostics(FIXTURES / "QUOTA_EXCEEDED.nvidia-a100.jsonl"), PLACEMENT)
    assert gpus is not None and gpus.hint is not None and "(NVIDIA_A100_GPUS)" in gpus.hint


def test_a_rate_limit_is_not_a_quota() -> None:
    text = ("googleapi: Error 403: Quota exceeded for quota metric 'Queries' and limit "
            "'Queries per minute' of service 'compute.googleapis.com', rateLimitExceeded")
    error = classify([Diagnostic(engine="terraform", summary=text)], PLACEMENT)
    assert error is not None and (error.code, error.scope) == ("RATE_LIMITED", "placement")
