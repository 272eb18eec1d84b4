"""Classifying Kubernetes failures from recorded pod statuses, events and API refusals.

tests/fixtures/errors/kubernetes/<Code>/<case>.json holds one failure in the shapes
the API returns: ``pod`` (``kubectl get pod -o json``) with ``events`` (``kubectl
get events -o json``, core/v1 or events.k8s.io/v1), or ``owner`` + ``events`` for
a controller's events (a StatefulSet's FailedCreate), or ``diagnostics`` as the
Pulumi engine reports an API refusal (``resource ... was not successfully created
by the Kubernetes API server : <the API's message>``). The folder names the
expected code; ``none`` holds cases that must not classify.
"""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path
from typing import Any

import pytest

from skyc.compiler.kubernetes.errors import RULES, classify
from skyc.compiler.kubernetes.events import event_diagnostics, pod_diagnostics
from skyc.model.diagnostics import Diagnostic
from skyc.model.plan import Placement

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "errors" / "kubernetes"
CASES = sorted(FIXTURES.glob("*/*.json"))

# What failover must do with each code: (scope to block, retryable elsewhere).
EXPECTED: dict[str, tuple[str, bool]] = {
    "InsufficientCapacity": ("region", True),
    "QuotaExceeded": ("region", True),
    "NoMatchingNode": ("region", True),
    "UntoleratedTaint": ("region", True),
    "PendingTimeout": ("region", True),
    "Forbidden": ("region", False),
    "PodSecurity": ("region", False),
    "Unauthorized": ("region", False),
    "ImagePullError": ("cloud", False),
    "ContainerConfigError": ("cloud", False),
}

PLACEMENT = Placement(cloud="kubernetes", region="gke_ml_us-central1_prod",
                      accelerators={"H100": 8}, hourly_cost=0.0)


def _time(value: str) -> _dt.datetime:
    return _dt.datetime.fromisoformat(value.replace("Z", "+00:00"))


def _diagnostics(case: dict[str, Any]) -> list[Diagnostic]:
    if "diagnostics" in case:
        return [Diagnostic.model_validate(d) for d in case["diagnostics"]]
    if "owner" in case:
        owner = case["owner"]
        return event_diagnostics(case["events"], owner["kind"], owner["name"], "ml")
    return pod_diagnostics(case["pod"], case.get("events", ()), now=_time(case["now"]),
                           pending_timeout=case.get("pending_timeout"))


def test_every_code_has_a_recorded_case() -> None:
    codes = {p.parent.name for p in CASES}
    assert set(EXPECTED) <= codes, f"no fixture for {set(EXPECTED) - codes}"
    assert {r.code for r in RULES} - {"Unschedulable"} == set(EXPECTED)


@pytest.mark.parametrize("path", CASES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_recorded_failure_is_classified(path: Path) -> None:
    case = json.loads(path.read_text())
    diagnostics = _diagnostics(case)
    error = classify(diagnostics, PLACEMENT)
    if path.parent.name == "none":
        assert error is None, error
        return
    assert error is not None, [d.summary for d in diagnostics]
    assert error.code == path.parent.name
    assert (error.scope, error.retryable) == EXPECTED[error.code]
    assert error.failure.cloud == "kubernetes"
    assert error.failure.region == "gke_ml_us-central1_prod"  # the context is the region
    assert error.failure.resource
    assert str(error).startswith(f"kubernetes/gke_ml_us-central1_prod: {error.code}: ")
    if not error.retryable:
        assert error.hint, "an error failover cannot fix must say what to do"


def test_pod_diagnostics_shape() -> None:
    case = json.loads((FIXTURES / "ImagePullError" / "not-found.json").read_text())
    diagnostics = pod_diagnostics(case["pod"], case["events"], now=_time(case["now"]))
    assert all(d.engine == "kubernetes" and d.address == "pod/ml/skyc-train-0"
               for d in diagnostics)
    summaries = [d.summary for d in diagnostics]
    assert summaries[0].startswith("ErrImagePull: container main: rpc error")
    assert "Failed: Error: ErrImagePull" in summaries
    assert not any(s.startswith(("Scheduled", "Pulling")) for s in summaries)  # Normal events
    assert pod_diagnostics(case["pod"], case["events"], now=_time(case["now"])) == diagnostics


def test_scheduling_failures_wait_for_the_timeout() -> None:
    case = json.loads((FIXTURES / "InsufficientCapacity" / "gpu.json").read_text())
    pod, events = case["pod"], case["events"]
    created = _time(pod["metadata"]["creationTimestamp"])
    early = pod_diagnostics(pod, events, now=created + _dt.timedelta(seconds=30),
                            pending_timeout=600)
    assert early == []  # an autoscaler may still add a node
    late = pod_diagnostics(pod, events, now=created + _dt.timedelta(seconds=601),
                           pending_timeout=600)
    assert [d.summary.split(":")[0] for d in late] == [
        "Unschedulable", "FailedScheduling", "PendingTimeout"]
    assert "not scheduled after 601 s" in late[-1].summary
    anytime = pod_diagnostics(pod, events)  # no timeout: the caller decides when
    error = classify(anytime, PLACEMENT)
    assert error is not None and error.code == "InsufficientCapacity"


def test_stopping_error_wins_over_capacity() -> None:
    capacity = Diagnostic(engine="kubernetes", summary="FailedScheduling: 0/3 nodes are "
                          "available: 3 Insufficient nvidia.com/gpu.", address="pod/ml/a-0")
    image = Diagnostic(engine="kubernetes", summary='ErrImagePull: container main: '
                       'failed to pull and unpack image "x"', address="pod/ml/a-1")
    error = classify([capacity, image], PLACEMENT)
    assert error is not None and error.code == "ImagePullError" and not error.retryable
    assert error.failure.resource == "pod/ml/a-1"


def test_unrecognised_and_warnings_do_not_classify() -> None:
    odd = Diagnostic(engine="pulumi", summary="something else went wrong")
    warn = Diagnostic(engine="kubernetes", summary="FailedScheduling: 0/1 nodes are "
                      "available: 1 Insufficient cpu.", severity="warning")
    assert classify([odd, warn], PLACEMENT) is None
    assert classify([], None) is None


def test_without_placement_names_kubernetes() -> None:
    diag = Diagnostic(engine="kubernetes", summary='pods "a-0" is forbidden: exceeded quota: q')
    error = classify([diag], None)
    assert error is not None and error.code == "QuotaExceeded"
    assert str(error).startswith("kubernetes: QuotaExceeded") and error.failure.region is None
