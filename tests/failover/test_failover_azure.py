"""Azure's capacity and quota errors through the engine-agnostic failover loop.

No Azure account exists here, so the provisioning step raises what the Azure
classifier makes of the fixture diagnostics (tests/fixtures/errors/azure): the
loop, the classifier and the blocked scopes are the real ones.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skyc.compiler.azure.errors import classify
from skyc.errors import InfeasibleError, ProvisionError
from skyc.failover import Blocked, provision_with_failover
from skyc.optimizer.plan import Placement
from skyc.stacks.diagnostics import Diagnostic

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "errors" / "azure"


def _p(region: str, zone: str | None, cost: float) -> Placement:
    return Placement(cloud="azure", region=region, zone=zone,
                     instance_type="Standard_ND96isr_MI300X_v5",
                     accelerators={"MI300X": 8}, hourly_cost=cost)


CANDIDATES = [
    _p("eastus2", "1", 48.0),
    _p("eastus2", "2", 48.0),
    _p("westus3", "1", 49.0),
    _p("westus3", "2", 49.0),
    _p("francecentral", None, 52.0),
]


def _next(blocked: list[Blocked]) -> Placement:
    for c in CANDIDATES:
        if not any(b.matches(c.cloud, c.region, c.zone) for b in blocked):
            return c
    raise InfeasibleError("nothing left")


def _error(case: str, placement: Placement) -> ProvisionError:
    diags = []
    for line in (FIXTURES / f"{case}.jsonl").read_text().splitlines():
        event = json.loads(line)["diagnosticEvent"]
        summary, _, detail = event["message"].strip().partition("\n")
        diags.append(Diagnostic(engine="pulumi", summary=summary, detail=detail,
                                address=event["urn"]))
    error = classify(diags, placement)
    assert error is not None, case
    return error


def test_allocation_failed_then_regional_quota_moves_region_twice() -> None:
    faults = {"eastus2": "AllocationFailed", "westus3": "OperationNotAllowed-regional-quota"}
    tried: list[Placement] = []
    cleaned: list[Placement] = []
    announced: list[tuple[str | None, str | None]] = []

    def provision(p: Placement) -> str:
        tried.append(p)
        if p.region in faults:
            raise _error(faults[p.region], p)
        return f"up in {p.region}"

    result = provision_with_failover(
        _next([]), provision=provision, cleanup=cleaned.append, next_placement=_next,
        on_attempt=lambda a, n: announced.append((a.error, n.region if n else None)),
    )
    # AllocationFailed "in this region" blocks eastus2 (both zones), the regional
    # vCPU quota blocks westus3: the third region comes up.
    assert result.value == "up in francecentral"
    assert [(p.region, p.zone) for p in tried] == [
        ("eastus2", "1"), ("westus3", "1"), ("francecentral", None)]
    assert cleaned == tried[:2]
    assert [(a.placement.region, a.error) for a in result.attempts] == [
        ("eastus2", "AllocationFailed"),
        ("westus3", "OperationNotAllowed"),
        ("francecentral", None),
    ]
    assert "regional vCPU quota" in result.attempts[1].message
    assert announced == [("AllocationFailed", "westus3"),
                         ("OperationNotAllowed", "francecentral"), (None, None)]


def test_a_zonal_failure_stays_in_the_region() -> None:
    tried: list[tuple[str | None, str | None]] = []

    def provision(p: Placement) -> str:
        tried.append((p.region, p.zone))
        if (p.region, p.zone) == ("eastus2", "1"):
            raise _error("ZonalAllocationFailed", p)
        return "up"

    result = provision_with_failover(
        _next([]), provision=provision, cleanup=lambda p: None, next_placement=_next)
    assert tried == [("eastus2", "1"), ("eastus2", "2")]
    assert result.placement.zone == "2"


def test_auth_errors_stop_at_once() -> None:
    tried: list[Placement] = []

    def provision(p: Placement) -> str:
        tried.append(p)
        raise _error("AuthorizationFailed", p)

    with pytest.raises(ProvisionError) as info:
        provision_with_failover(
            _next([]), provision=provision, cleanup=lambda p: None, next_placement=_next)
    assert info.value.code == "AuthorizationFailed"
    assert info.value.hint and "az login" in info.value.hint
    assert len(tried) == 1
