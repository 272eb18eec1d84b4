"""Kubernetes failures through the engine-agnostic failover loop: a context without
room (pods Pending past kubernetes.pending_timeout, an exhausted quota) blocks that
context and the next context or cloud is tried; RBAC and image errors stop with the fix.

No Kubernetes API server can run here, so the provisioning step raises what the
Kubernetes classifier makes of the recorded pod statuses, events and API refusals
(tests/fixtures/errors/kubernetes): the loop, the classifier, the pending-timeout
rule and the blocked scopes are the real ones.
"""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path
from typing import Any

import pytest

from skyc.apply.failover import Blocked, provision_with_failover
from skyc.compiler import classify_error
from skyc.compiler.kubernetes.events import pod_diagnostics
from skyc.errors import InfeasibleError, ProvisionError
from skyc.model.diagnostics import Diagnostic
from skyc.model.plan import Placement

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "errors" / "kubernetes"


def _k8s(context: str) -> Placement:
    return Placement(cloud="kubernetes", region=context, accelerators={"H100": 8},
                     num_nodes=2, hourly_cost=0.0)


CANDIDATES = [
    _k8s("gke-prod"),
    _k8s("onprem"),
    Placement(cloud="aws", region="us-east-1", zone="use1-az4", instance_type="p5.48xlarge",
              accelerators={"H100": 8}, num_nodes=2, hourly_cost=196.6),
]


def _next(blocked: list[Blocked]) -> Placement:
    for c in CANDIDATES:
        if not any(b.matches(c.cloud, c.region, c.zone) for b in blocked):
            return c
    raise InfeasibleError("nothing left")


def _case(path: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / path).read_text())
    return data


def _diagnostics(case: dict[str, Any], *, age: float | None = None) -> list[Diagnostic]:
    if "diagnostics" in case:
        return [Diagnostic.model_validate(d) for d in case["diagnostics"]]
    created = _dt.datetime.fromisoformat(
        case["pod"]["metadata"]["creationTimestamp"].replace("Z", "+00:00"))
    now = created + _dt.timedelta(seconds=age) if age is not None else \
        _dt.datetime.fromisoformat(case["now"].replace("Z", "+00:00"))
    return pod_diagnostics(case["pod"], case.get("events", ()), now=now,
                           pending_timeout=case.get("pending_timeout"))


def _error(path: str, placement: Placement, *, age: float | None = None) -> ProvisionError:
    error = classify_error("kubernetes", _diagnostics(_case(path), age=age),
                           placement=placement)
    assert error is not None, path
    return error


def test_pending_past_the_timeout_then_quota_fail_over_to_the_next_cloud() -> None:
    faults = {"gke-prod": "InsufficientCapacity/gpu.json",
              "onprem": "QuotaExceeded/pulumi-create.json"}
    tried: list[Placement] = []
    cleaned: list[Placement] = []

    def provision(p: Placement) -> str:
        tried.append(p)
        if p.cloud == "kubernetes":
            raise _error(faults[str(p.region)], p)
        return f"up in {p.infra}"

    result = provision_with_failover(
        _next([]), provision=provision, cleanup=cleaned.append, next_placement=_next)
    assert result.value == "up in aws/us-east-1/use1-az4"
    assert [p.infra for p in tried] == ["kubernetes/gke-prod", "kubernetes/onprem",
                                        "aws/us-east-1/use1-az4"]
    assert cleaned == tried[:2]  # what each failed attempt created is destroyed
    assert [(a.placement.region, a.error) for a in result.attempts] == [
        ("gke-prod", "InsufficientCapacity"), ("onprem", "QuotaExceeded"),
        ("us-east-1", None)]
    assert "Insufficient nvidia.com/gpu" in result.attempts[0].message


def test_a_pod_never_scheduled_is_a_capacity_error_only_past_the_timeout() -> None:
    """Before pending_timeout an autoscaler may still add a node: nothing to act on."""
    case = "PendingTimeout/never-scheduled.json"
    timeout = float(_case(case)["pending_timeout"])
    waiting = classify_error("kubernetes", _diagnostics(_case(case), age=timeout / 2),
                             placement=CANDIDATES[0])
    assert waiting is None
    tried: list[str | None] = []

    def provision(p: Placement) -> str:
        tried.append(p.region)
        if p.region == "gke-prod":
            raise _error(case, p, age=timeout + 1)
        return "up"

    result = provision_with_failover(
        _next([]), provision=provision, cleanup=lambda p: None, next_placement=_next)
    assert tried == ["gke-prod", "onprem"]
    assert result.attempts[0].error == "PendingTimeout"


def test_the_engines_wait_running_out_moves_to_the_next_context() -> None:
    tried: list[str | None] = []

    def provision(p: Placement) -> str:
        tried.append(p.region)
        if p.region == "gke-prod":
            raise _error("PendingTimeout/pulumi-await-timeout.json", p)
        return "up"

    result = provision_with_failover(
        _next([]), provision=provision, cleanup=lambda p: None, next_placement=_next)
    assert tried == ["gke-prod", "onprem"] and result.value == "up"


@pytest.mark.parametrize(("case", "code", "hint"), [
    ("Forbidden/rbac-create-pod.json", "Forbidden", "RBAC"),
    ("ImagePullError/not-found.json", "ImagePullError", "image_id"),
])
def test_rbac_and_image_errors_stop_with_the_fix(case: str, code: str, hint: str) -> None:
    tried: list[Placement] = []

    def provision(p: Placement) -> str:
        tried.append(p)
        raise _error(case, p)

    with pytest.raises(ProvisionError) as info:
        provision_with_failover(
            _next([]), provision=provision, cleanup=lambda p: None, next_placement=_next)
    assert info.value.code == code
    assert info.value.hint and hint in info.value.hint
    assert len(tried) == 1
