"""Azure's capacity and quota errors through the engine-agnostic failover loop.

No Azure account exists here, so the provisioning step raises what the Azure
classifier makes of the fixture diagnostics (tests/fixtures/errors/azure): the
loop, the classifier and the blocked scopes are the real ones. The last test runs
the real Pulumi engine (Automation API) on the compiled Azure stacks, with the
stand-in ``pulumi`` CLI (tests/support/pulumi_standin.py: no Pulumi CLI can be
installed here) failing the VM with the recorded Azure errors.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skyc.apply.failover import Blocked, provision_with_failover
from skyc.apply.provision import destroy_attempt, plan_changes
from skyc.compiler import classify_error
from skyc.compiler.azure.errors import classify
from skyc.errors import ApplyFailed, InfeasibleError, ProvisionError
from skyc.model.diagnostics import Diagnostic
from skyc.model.plan import Placement
from skyc.settings.config import SkycConfig
from skyc.stacks import open_engine
from skyc.task.candidate import ResourceCandidate
from tests.support.pulumi_standin import install

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


def _azure_message(case: str) -> str:
    """The message Azure's refusal carries in the fixture (the VM's diagnostic)."""
    for line in (FIXTURES / f"{case}.jsonl").read_text().splitlines():
        event = json.loads(line)["diagnosticEvent"]
        if event["urn"].endswith("compute:VirtualMachine::head"):
            return str(event["message"]).strip()
    raise AssertionError(f"{case}: no VM diagnostic")


@pytest.mark.slow
def test_failover_through_the_pulumi_engine(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pulumi_azure_native", reason="the Pulumi SDKs are not installed")
    home = tmp_path / "home"
    monkeypatch.setenv("SKYC_HOME", str(home))
    monkeypatch.setenv("SKYC_PULUMI_ROOT", str(install(tmp_path / "standin")))
    monkeypatch.setenv("STANDIN_FAIL_TYPE", "azure-native:compute:VirtualMachine")
    faults = {"eastus2": "AllocationFailed", "westus3": "OperationNotAllowed-regional-quota"}
    config = SkycConfig()
    tried: list[str] = []
    cleaned: list[str] = []

    def provision(p: Placement) -> set[str]:
        tried.append(f"{p.region}/{p.zone}")
        if p.region in faults:
            monkeypatch.setenv("STANDIN_FAIL", _azure_message(faults[p.region]))
        else:
            monkeypatch.delenv("STANDIN_FAIL", raising=False)
        diff = plan_changes("mi", p, ResourceCandidate(index=0), config=config)
        engine = open_engine("pulumi", home / "clusters" / "mi")
        try:
            engine.apply(diff)
        except ApplyFailed as failed:
            error = classify_error("azure", failed.diagnostics, placement=p)
            assert error is not None, failed.diagnostics
            raise error from None
        return set(engine.outputs())

    def cleanup(p: Placement) -> None:
        cleaned.append(f"{p.region}/{p.zone}")
        destroy_attempt("mi")

    result = provision_with_failover(_next([]), provision=provision, cleanup=cleanup,
                                     next_placement=_next)
    assert tried == ["eastus2/1", "westus3/1", "francecentral/None"]
    assert cleaned == tried[:2]
    assert [(a.placement.region, a.error) for a in result.attempts] == [
        ("eastus2", "AllocationFailed"), ("westus3", "OperationNotAllowed"),
        ("francecentral", None)]
    assert result.value == {"names", "private_ips", "public_ips", "ssh_user"}
    program = (home / "clusters" / "mi" / "__main__.py").read_text()
    assert 'location="francecentral"' in program and "eastus2" not in program
