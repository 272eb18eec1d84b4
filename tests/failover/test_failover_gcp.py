"""Failover on GCP's errors: zone, then region, then cloud, as for AWS.

The loop is engine-agnostic, so no cloud is needed: each attempt "fails" with
the ProvisionError the GCP classifier makes of a fixture (GCP's error text in
the events a failed ``pulumi up`` emits, tests/fixtures/errors/gcp/), and the
next placement comes from the real optimizer over the bundled catalog with
the blocked places. Only the provisioning step is a stand-in: no GCP account
can be reached from here. The last test runs the real Pulumi engine (Automation
API) on the compiled GCP stacks with the stand-in ``pulumi`` CLI
(tests/support/pulumi_standin.py: no Pulumi CLI can be installed here) failing
the VM with GCP's recorded error texts.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from skyc.apply.failover import Attempt, Blocked, provision_with_failover
from skyc.apply.provision import destroy_attempt, plan_changes
from skyc.catalog import load_catalog
from skyc.compiler import classify_error
from skyc.compiler.gcp.errors import classify
from skyc.errors import ApplyFailed, ProvisionError
from skyc.model.plan import Placement
from skyc.optimizer import optimize
from skyc.settings.config import SkycConfig
from skyc.stacks import open_engine
from skyc.task.candidate import ResourceCandidate
from tests.compiler.test_gcp_errors import FIXTURES, diagnostics
from tests.optimizer.helpers import make_task

A100X8_GCP = {"accelerator": {"name": "A100", "count": 8}, "infra": {"cloud": "gcp"}}


def _planner(*candidates: dict[str, object]) -> tuple[Callable[[list[Blocked]], Placement],
                                                     list[list[Blocked]]]:
    task = make_task({"candidates": list(candidates)})
    catalog = load_catalog()
    asked: list[list[Blocked]] = []

    def next_placement(blocked: list[Blocked]) -> Placement:
        asked.append(list(blocked))
        return optimize([task], catalog, blocked=blocked).tasks[0].placement

    return next_placement, asked


def _fails_with(fixture: str, placement: Placement) -> ProvisionError:
    error = classify(diagnostics(FIXTURES / f"{fixture}.jsonl"), placement)
    assert error is not None, fixture
    return error


def test_zone_exhaustion_then_regional_quota_moves_zone_then_region() -> None:
    next_placement, asked = _planner(A100X8_GCP)
    script = ["ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS", "QUOTA_EXCEEDED.nvidia-a100"]
    tried: list[Placement] = []
    cleaned: list[Placement] = []
    trail: list[tuple[Attempt, Placement | None]] = []

    def provision(p: Placement) -> str:
        tried.append(p)
        if script:
            raise _fails_with(script.pop(0), p)
        return f"up in {p.zone}"

    result = provision_with_failover(
        next_placement([]), provision=provision, cleanup=cleaned.append,
        next_placement=next_placement, on_attempt=lambda a, n: trail.append((a, n)))

    first, second, third = tried
    # the cheapest A100:8 (europe-west4-a), its sibling zone, then the next region
    assert (first.region, first.zone) == ("europe-west4", "europe-west4-a")
    assert (second.region, second.zone) == ("europe-west4", "europe-west4-b")
    assert third.region != "europe-west4" and third.cloud == "gcp"
    assert {p.instance_type for p in tried} == {"a2-highgpu-8g"}
    assert first.hourly_cost <= second.hourly_cost <= third.hourly_cost
    assert result.value == f"up in {third.zone}" and result.placement == third
    assert cleaned == [first, second]  # each failed attempt is destroyed before moving on
    # what was blocked when each next placement was asked for
    assert asked[1:] == [
        [Blocked(cloud="gcp", region="europe-west4", zone="europe-west4-a")],
        [Blocked(cloud="gcp", region="europe-west4", zone="europe-west4-a"),
         Blocked(cloud="gcp", region="europe-west4")],
    ]
    # the attempt trail: code, where, and the next placement announced with each
    codes = [a.error for a in result.attempts]
    assert codes == ["ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS", "QUOTA_EXCEEDED", None]
    assert [a.placement for a in result.attempts] == tried
    assert result.attempts[0].message.startswith("gcp/europe-west4/europe-west4-a: ZONE_")
    assert "QUOTA_EXCEEDED: quota NVIDIA_A100_GPUS in region" in result.attempts[1].message
    assert [n for _, n in trail] == [second, third, None]


def test_global_gpu_quota_leaves_gcp_for_the_next_cloud() -> None:
    next_placement, _ = _planner(A100X8_GCP, {"accelerator": {"name": "A100", "count": 8},
                                              "infra": {"cloud": "aws"}})
    first = next_placement([])
    assert first.cloud == "gcp"

    def provision(p: Placement) -> str:
        if p.cloud == "gcp":
            raise _fails_with("QUOTA_EXCEEDED.gpus-all-regions", p)
        return p.cloud

    result = provision_with_failover(first, provision=provision, cleanup=lambda p: None,
                                     next_placement=next_placement)
    assert result.value == "aws" and result.placement.instance_type == "p4d.24xlarge"
    assert [a.placement.cloud for a in result.attempts] == ["gcp", "aws"]


def test_tpu_stockout_moves_to_another_zone() -> None:
    next_placement, _ = _planner({"accelerator": {"name": "tpu-v5litepod-8", "count": 1},
                                  "infra": {"cloud": "gcp"}})
    first = next_placement([])
    assert first.instance_type == "TPU-VM"

    def provision(p: Placement) -> str:
        if p == first:
            raise _fails_with("RESOURCE_EXHAUSTED.tpu", p)
        return "up"

    result = provision_with_failover(first, provision=provision, cleanup=lambda p: None,
                                     next_placement=next_placement)
    assert result.placement.zone != first.zone
    assert [a.error for a in result.attempts] == ["RESOURCE_EXHAUSTED", None]


@pytest.mark.parametrize("fixture", ["SERVICE_DISABLED", "PERMISSION_DENIED", "UNAUTHENTICATED"])
def test_errors_another_placement_cannot_fix_stop_at_once(fixture: str) -> None:
    next_placement, asked = _planner(A100X8_GCP)
    tried: list[Placement] = []

    def provision(p: Placement) -> str:
        tried.append(p)
        raise _fails_with(fixture, p)

    with pytest.raises(ProvisionError) as info:
        provision_with_failover(next_placement([]), provision=provision,
                                cleanup=lambda p: None, next_placement=next_placement)
    assert not info.value.retryable and info.value.hint
    assert len(tried) == 1 and len(asked) == 1  # no second placement was even asked for


def _gcp_message(fixture: str, resource: str = "gcp:compute/instance:Instance") -> str:
    """The fullest text GCP's refusal has in the fixture (the engine's form of it)."""
    messages = [json.loads(line)["diagnosticEvent"]["message"]
                for line in (FIXTURES / f"{fixture}.jsonl").read_text().splitlines()
                if resource in line and "diagnosticEvent" in line]
    return str(max(messages, key=len)).strip()


@pytest.mark.slow
def test_failover_through_the_pulumi_engine(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pulumi_gcp", reason="the Pulumi SDKs (skyc[pulumi]) are not installed")
    from tests.support.pulumi_standin import install

    home = tmp_path / "home"
    monkeypatch.setenv("SKYC_HOME", str(home))
    monkeypatch.setenv("SKYC_PULUMI_ROOT", str(install(tmp_path / "standin")))
    monkeypatch.setenv("STANDIN_FAIL_TYPE", "gcp:compute/instance:Instance")
    faults = {"europe-west4-a": "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS",
              "europe-west4-b": "QUOTA_EXCEEDED.nvidia-a100"}
    config = SkycConfig.model_validate({"gcp": {"project": "my-project-1"}})
    next_placement, _ = _planner(A100X8_GCP)
    tried: list[str] = []
    cleaned: list[str] = []

    def provision(p: Placement) -> set[str]:
        tried.append(p.zone or "")
        if p.zone in faults:
            monkeypatch.setenv("STANDIN_FAIL", _gcp_message(faults[p.zone]))
        else:
            monkeypatch.delenv("STANDIN_FAIL", raising=False)
        diff = plan_changes("train", p, ResourceCandidate(index=0), config=config)
        engine = open_engine("pulumi", home / "clusters" / "train")
        try:
            engine.apply(diff)
        except ApplyFailed as failed:
            error = classify_error("gcp", failed.diagnostics, placement=p)
            assert error is not None, failed.diagnostics
            raise error from None
        return set(engine.outputs())

    def cleanup(p: Placement) -> None:
        cleaned.append(p.zone or "")
        destroy_attempt("train")

    result = provision_with_failover(next_placement([]), provision=provision, cleanup=cleanup,
                                     next_placement=next_placement)
    assert tried[:2] == ["europe-west4-a", "europe-west4-b"] and len(tried) == 3
    assert not tried[2].startswith("europe-west4")
    assert cleaned == tried[:2]
    assert [a.error for a in result.attempts] == [
        "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS", "QUOTA_EXCEEDED", None]
    assert result.value == {"external_ips", "instance_names", "internal_ips", "ssh_user"}
    program = (home / "clusters" / "train" / "__main__.py").read_text()
    assert f'zone="{tried[2]}"' in program and "europe-west4" not in program


@pytest.mark.slow
def test_tpu_stockout_through_the_pulumi_engine(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pulumi_gcp", reason="the Pulumi SDKs (skyc[pulumi]) are not installed")
    from tests.support.pulumi_standin import install

    home = tmp_path / "home"
    monkeypatch.setenv("SKYC_HOME", str(home))
    monkeypatch.setenv("SKYC_PULUMI_ROOT", str(install(tmp_path / "standin")))
    monkeypatch.setenv("STANDIN_FAIL_TYPE", "gcp:tpu/v2Vm:V2Vm")
    config = SkycConfig.model_validate({"gcp": {"project": "my-project-1"}})
    next_placement, _ = _planner({"accelerator": {"name": "tpu-v5litepod-8", "count": 1},
                                  "infra": {"cloud": "gcp"}})
    first = next_placement([])
    stockout = _gcp_message("RESOURCE_EXHAUSTED.tpu", "gcp:tpu/v2Vm:V2Vm")

    def provision(p: Placement) -> set[str]:
        if p.zone == first.zone:
            monkeypatch.setenv("STANDIN_FAIL", stockout)
        else:
            monkeypatch.delenv("STANDIN_FAIL", raising=False)
        diff = plan_changes("tpu", p, ResourceCandidate(index=0), config=config)
        engine = open_engine("pulumi", home / "clusters" / "tpu")
        try:
            engine.apply(diff)
        except ApplyFailed as failed:
            error = classify_error("gcp", failed.diagnostics, placement=p)
            assert error is not None, failed.diagnostics
            raise error from None
        return set(engine.outputs())

    result = provision_with_failover(first, provision=provision,
                                     cleanup=lambda p: destroy_attempt("tpu"),
                                     next_placement=next_placement)
    assert [a.error for a in result.attempts] == ["RESOURCE_EXHAUSTED", None]
    assert result.placement.zone != first.zone
    assert result.value == {"instance_names", "ssh_user", "tpu_endpoints", "tpu_hosts"}
    program = (home / "clusters" / "tpu" / "__main__.py").read_text()
    assert 'accelerator_type="v5litepod-8"' in program
    assert f'zone="{result.placement.zone}"' in program
