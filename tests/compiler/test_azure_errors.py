"""Classifying Azure provisioning failures as the Pulumi engine reports them.

The fixtures in tests/fixtures/errors/azure/<Case>.jsonl are Pulumi engine events
(see the README there for where each text comes from). Each event's diagnostic is
turned into the neutral Diagnostic here the way an engine does: the first line is
the summary, the rest the detail, the URN the address.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skyc.apply.failover import blocked_scope
from skyc.compiler.azure.errors import classify, error_codes, error_message
from skyc.errors import ProvisionError
from skyc.model.diagnostics import Diagnostic
from skyc.model.plan import Placement
from skyc.optimizer.blocked import Blocked

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "errors" / "azure"
RECORDED = sorted(FIXTURES.glob("*.jsonl"))

ON_DEMAND = Placement(cloud="azure", region="eastus2", zone="2",
                      instance_type="Standard_ND96isr_MI300X_v5",
                      accelerators={"MI300X": 8}, hourly_cost=48.0)
VM_URN = "urn:pulumi:train::skyc::azure-native:compute:VirtualMachine::head"
SPOT = ON_DEMAND.model_copy(update={"use_spot": True, "hourly_cost": 20.0})

# case -> (code, scope, retryable, spot placement?)
EXPECTED: dict[str, tuple[str, str, bool, bool]] = {
    "AllocationFailed": ("AllocationFailed", "region", True, False),
    "AllocationFailed-polling": ("AllocationFailed", "region", True, False),
    "ZonalAllocationFailed": ("ZonalAllocationFailed", "zone", True, False),
    "OverconstrainedAllocationRequest": ("OverconstrainedAllocationRequest", "region", True, False),
    "OverconstrainedZonalAllocationRequest":
        ("OverconstrainedZonalAllocationRequest", "zone", True, False),
    "SkuNotAvailable-region": ("SkuNotAvailable", "region", True, False),
    "SkuNotAvailable-zone": ("SkuNotAvailable", "zone", True, False),
    "SkuNotAvailable-capacity": ("SkuNotAvailable", "region", True, False),
    "SkuNotAvailable-spot": ("SkuNotAvailable", "region", True, True),
    "OperationNotAllowed-family-quota": ("OperationNotAllowed", "region", True, False),
    "OperationNotAllowed-regional-quota": ("OperationNotAllowed", "region", True, False),
    "OperationNotAllowed-spot-quota": ("OperationNotAllowed", "region", True, True),
    "QuotaExceeded-azcore": ("QuotaExceeded", "region", True, False),
    "InvalidTemplateDeployment-quota": ("QuotaExceeded", "region", True, False),
    "InvalidTemplateDeployment-sku": ("SkuNotAvailable", "region", True, False),
    "AzureSpotIsNotSupportedForThisVMSize":
        ("AzureSpotIsNotSupportedForThisVMSize", "cloud", True, True),
    "AuthorizationFailed": ("AuthorizationFailed", "cloud", False, False),
    "InvalidAuthenticationToken": ("InvalidAuthenticationToken", "cloud", False, False),
    "ExpiredAuthenticationToken": ("ExpiredAuthenticationToken", "cloud", False, False),
    "AADSTS7000215": ("AADSTS7000215", "cloud", False, False),
    "MissingSubscriptionRegistration": ("MissingSubscriptionRegistration", "cloud", False, False),
    "PlatformImageNotFound": ("PlatformImageNotFound", "cloud", False, False),
}


def _diagnostics(path: Path) -> list[Diagnostic]:
    out = []
    for line in path.read_text().splitlines():
        event = json.loads(line).get("diagnosticEvent")
        if not event:
            continue
        summary, _, detail = event["message"].strip().partition("\n")
        severity = "error" if event["severity"] == "error" else "warning"
        out.append(Diagnostic(engine="pulumi", summary=summary, detail=detail,
                              address=event.get("urn"), severity=severity))
    return out


def _diag(text: str, severity: str = "error") -> Diagnostic:
    return Diagnostic(engine="pulumi", summary=text, address="urn:x::head",
                      severity=severity)  # type: ignore[arg-type]


def test_every_fixture_has_an_expectation_and_back() -> None:
    assert RECORDED, f"no fixtures in {FIXTURES}"
    assert {p.stem for p in RECORDED} == set(EXPECTED)


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.stem)
def test_fixture_is_classified(path: Path) -> None:
    code, scope, retryable, spot = EXPECTED[path.stem]
    placement = SPOT if spot else ON_DEMAND
    error = classify(_diagnostics(path), placement)
    assert isinstance(error, ProvisionError), path.stem
    assert (error.code, error.scope, error.retryable) == (code, scope, retryable)
    assert error.failure.cloud == "azure"
    assert (error.failure.region, error.failure.zone) == ("eastus2", "2")
    assert error.failure.resource == VM_URN
    assert error.message.startswith(f"azure/eastus2/2: {code} (")
    if not retryable:
        assert error.hint


def test_the_stacks_own_update_failed_line_is_not_an_error_code() -> None:
    assert classify([_diag("update failed")], ON_DEMAND) is None
    assert classify([], ON_DEMAND) is None


def test_warnings_are_skipped() -> None:
    text = 'Status=200 Code="ZonalAllocationFailed" Message="Allocation failed."'
    assert classify([_diag(text, "warning")], ON_DEMAND) is None
    assert classify([_diag(text)], ON_DEMAND) is not None


def test_first_classifiable_diagnostic_wins() -> None:
    diags = [_diag("something else"),
             Diagnostic(engine="pulumi", address="urn:x::worker1",
                        summary='Status=409 Code="SkuNotAvailable" Message="... zones \'3\' ..."')]
    error = classify(diags, ON_DEMAND)
    assert error is not None and error.failure.resource == "urn:x::worker1"
    assert error.scope == "zone"


def test_quota_messages_name_the_quota() -> None:
    family = classify(_diagnostics(FIXTURES / "OperationNotAllowed-family-quota.jsonl"), ON_DEMAND)
    assert family is not None and "standardDASv5Family vCPU quota" in family.message
    assert family.hint and "eastus2" in family.hint
    regional = classify(_diagnostics(FIXTURES / "OperationNotAllowed-regional-quota.jsonl"),
                        ON_DEMAND)
    assert regional is not None and "regional vCPU quota" in regional.message
    spot = classify(_diagnostics(FIXTURES / "OperationNotAllowed-spot-quota.jsonl"), SPOT)
    assert spot is not None and "spot (low-priority) vCPU quota" in spot.message


def test_the_fix_is_in_the_hint() -> None:
    reg = classify(_diagnostics(FIXTURES / "MissingSubscriptionRegistration.jsonl"), ON_DEMAND)
    assert reg is not None and reg.hint is not None
    assert "az provider register --namespace Microsoft.Compute" in reg.hint
    auth = classify(_diagnostics(FIXTURES / "AuthorizationFailed.jsonl"), ON_DEMAND)
    assert auth is not None and auth.hint is not None
    assert "az login" in auth.hint and "AZURE_CLIENT_ID" in auth.hint


def test_sku_not_available_for_spot_blocks_the_region_even_with_zones() -> None:
    text = ('Status=409 Code="SkuNotAvailable" Message="The requested VM size for resource '
            "'x' is currently not available in location 'eastus2' zones '2' for subscription "
            "'s'.\"")
    assert classify([_diag(text)], ON_DEMAND).scope == "zone"  # type: ignore[union-attr]
    assert classify([_diag(text)], SPOT).scope == "region"  # type: ignore[union-attr]


def test_allocation_failed_in_a_zone_blocks_the_zone_only() -> None:
    text = ('Status=200 Code="AllocationFailed" Message="Allocation failed. We do not have '
            'sufficient capacity for the requested VM size in this zone."')
    error = classify([_diag(text)], ON_DEMAND)
    assert error is not None and error.scope == "zone"
    assert blocked_scope(ON_DEMAND, error) == Blocked(cloud="azure", region="eastus2", zone="2")
    unzoned = ON_DEMAND.model_copy(update={"zone": None})
    assert classify([_diag(text)], unzoned).scope == "region"  # type: ignore[union-attr]


def test_a_wrapper_with_nothing_known_inside_stops() -> None:
    text = ('Status=400 Code="InvalidTemplateDeployment" Message="The template deployment '
            "'x' is not valid according to the validation procedure.\"")
    error = classify([_diag(text)], ON_DEMAND)
    assert error is not None
    assert (error.code, error.retryable) == ("InvalidTemplateDeployment", False)


def test_operation_not_allowed_without_a_quota_is_not_retried() -> None:
    text = ('Status=409 Code="OperationNotAllowed" Message="The requested operation is not '
            'allowed because the VM is being deleted."')
    error = classify([_diag(text)], ON_DEMAND)
    assert error is not None and (error.scope, error.retryable) == ("cloud", False)


def test_unknown_codes_are_left_unclassified() -> None:
    text = 'Status=409 Code="SomethingNewInArm" Message="A condition skyc does not know."'
    assert classify([_diag(text)], ON_DEMAND) is None


@pytest.mark.parametrize("code", ["TooManyRequests", "InternalServerError", "RetryableError",
                                  "ServiceUnavailable"])
def test_throttling_and_server_errors_try_the_same_placement_again(code: str) -> None:
    # The shape ARM's errors reach the engines in (azure-native's Code="..." form).
    text = f'Status=500 Code="{code}" Message="Please retry the request."'
    error = classify([_diag(text)], ON_DEMAND)
    assert error is not None and error.code == code
    assert (error.scope, error.retryable) == ("placement", True)


def test_codes_and_messages_are_read_from_every_shape() -> None:
    wrapped = _diagnostics(FIXTURES / "InvalidTemplateDeployment-quota.jsonl")[0].text
    assert error_codes(wrapped) == ["InvalidTemplateDeployment", "QuotaExceeded"]
    assert error_message(wrapped).startswith("Operation could not be completed")
    azcore = _diagnostics(FIXTURES / "QuotaExceeded-azcore.jsonl")[0].text
    assert error_codes(azcore) == ["QuotaExceeded"]
    assert "standardNCASv3_T4Family" in error_message(azcore)


def test_without_a_placement_the_cloud_is_named() -> None:
    error = classify(_diagnostics(FIXTURES / "ZonalAllocationFailed.jsonl"), None)
    assert error is not None and error.message.startswith("azure: ZonalAllocationFailed")
    assert error.failure.region is None


# Public IP addresses count per region and subscription (Azure's networking limits):
# the next region has its own. ARM's text, in the shapes it reaches the engines in:
# azure-native's, the network provider's BadRequest around the real error's JSON body
# (escaped, inside a deployment's details), and the Azure SDK's ``ERROR CODE:`` form.
_PUBLIC_IP = "Cannot create more than 20 public IP addresses for this subscription in this region."
_PUBLIC_IP_TEXTS = {
    "azure-native": f'Status=400 Code="PublicIPCountLimitReached" Message="{_PUBLIC_IP}" '
                    "Details=[]",
    "deployment-bad-request": (
        'Code="DeploymentFailed" Message="At least one resource deployment operation failed. '
        'Please list deployment operations for details." Details=[{"code":"BadRequest",'
        '"message":"{\\r\\n  \\"error\\": {\\r\\n    \\"code\\": \\"PublicIPCountLimitReached\\",'
        f'\\r\\n    \\"message\\": \\"{_PUBLIC_IP}\\",'
        '\\r\\n    \\"details\\": []\\r\\n  }\\r\\n}"}]'),
    "sdk": ("(PublicIPCountLimitReached) " + _PUBLIC_IP + "\nCode: PublicIPCountLimitReached\n"
            "Message: " + _PUBLIC_IP + "\nERROR CODE: PublicIPCountLimitReached\n"
            '{"error": {"code": "PublicIPCountLimitReached", "message": "' + _PUBLIC_IP + '"}}'),
}


@pytest.mark.parametrize("shape", sorted(_PUBLIC_IP_TEXTS))
def test_the_public_ip_quota_blocks_the_region(shape: str) -> None:
    error = classify([_diag(_PUBLIC_IP_TEXTS[shape])], ON_DEMAND)
    assert error is not None
    assert (error.code, error.scope, error.retryable) == ("PublicIPCountLimitReached",
                                                          "region", True)
    assert blocked_scope(ON_DEMAND, error) == Blocked(cloud="azure", region="eastus2")
    assert error.message == (f"azure/eastus2/2: PublicIPCountLimitReached (quota of public IP "
                             f"addresses): {_PUBLIC_IP}")
    assert error.hint == ("request more public IP addresses in eastus2 (portal: Quotas, "
                          "Networking), or delete unused ones")


def test_a_bad_request_that_names_only_the_limit_is_the_quota() -> None:
    text = ('Status=400 Code="BadRequest" Message="Cannot create more than 3 public IP '
            'addresses for this subscription in this region."')
    error = classify([_diag(text)], ON_DEMAND)
    assert error is not None and (error.code, error.scope) == ("PublicIPCountLimitReached",
                                                               "region")
    plain = classify([_diag('Status=400 Code="BadRequest" Message="Bad value."')], ON_DEMAND)
    assert plain is not None and (plain.code, plain.retryable) == ("BadRequest", False)


def test_other_network_count_limits_block_the_region_and_are_named() -> None:
    text = ('Status=400 Code="StaticPublicIPCountLimitReached" Message="Cannot create more '
            "than 20 public IP addresses with static allocation method for this subscription "
            'in this region."')
    error = classify([_diag(text)], ON_DEMAND)
    assert error is not None and (error.scope, error.retryable) == ("region", True)
    assert "(quota of static public IP addresses)" in error.message
    odd = classify([_diag('Status=400 Code="NetworkWatcherCountLimitReached" Message="x"')],
                   ON_DEMAND)
    assert odd is not None and "(quota of NetworkWatcher)" in odd.message


def test_a_core_quota_in_other_words_still_blocks_the_region() -> None:
    text = ('Status=409 Code="OperationNotAllowed" Message="The operation could not be '
            'completed as it results in exceeding the approved quota for the subscription."')
    error = classify([_diag(text)], ON_DEMAND)
    assert error is not None and (error.scope, error.retryable) == ("region", True)
    assert error.hint == "request a quota increase in eastus2 (portal: Quotas)"
