"""Classifying AWS provisioning failures from real ``terraform apply -json`` output.

The fixtures in tests/fixtures/errors/aws/<Code>.jsonl are diagnostics recorded
from real terraform runs; each file's name is the expected code. They reach the
classifier the way the terraform engine passes them on: as neutral Diagnostics.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from skyc.compiler import classify_error
from skyc.errors import ProvisionError
from skyc.model.diagnostics import Diagnostic
from skyc.model.plan import Placement
from skyc.stacks.terraform_output import diagnostic

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "errors" / "aws"
RECORDED = sorted(FIXTURES.glob("*.jsonl"))
PULUMI = sorted((FIXTURES.parent / "aws-pulumi").glob("*.jsonl"))

# What failover must do with each code: (scope to block, retryable elsewhere).
EXPECTED: dict[str, tuple[str, bool]] = {
    "InsufficientInstanceCapacity": ("zone", True),
    "InsufficientHostCapacity": ("zone", True),
    "Unsupported": ("zone", True),
    "SpotMaxPriceTooLow": ("zone", True),
    "VcpuLimitExceeded": ("region", True),
    "MaxSpotInstanceCountExceeded": ("region", True),
    "InstanceLimitExceeded": ("region", True),
    "AuthFailure": ("cloud", False),
    "UnauthorizedOperation": ("cloud", False),
    "InvalidClientTokenId": ("cloud", False),
    "InvalidParameterValue": ("cloud", False),
    "InvalidParameterCombination": ("cloud", False),
    "InvalidPermission.NotFound": ("placement", True),
    "RequestLimitExceeded": ("placement", True),
    "InvalidAMIID.NotFound": ("cloud", False),
}

PLACEMENT = Placement(cloud="aws", region="us-east-1", zone="use1-az1",
                      instance_type="t3.micro", hourly_cost=0.01)


def _diagnostics(path: Path) -> list[Diagnostic]:
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [d for d in map(diagnostic, lines) if d is not None]


def test_fixtures_are_present() -> None:
    assert RECORDED, f"no recorded diagnostics in {FIXTURES}"


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.stem)
def test_recorded_diagnostic_is_classified(path: Path) -> None:
    diagnostics = _diagnostics(path)
    assert diagnostics, f"{path.name} holds no error diagnostic"
    error = classify_error("aws", diagnostics, placement=PLACEMENT)
    assert isinstance(error, ProvisionError)
    assert error.code == path.stem
    assert error.failure.cloud == "aws"
    assert error.failure.region == "us-east-1" and error.failure.zone == "use1-az1"
    assert error.failure.resource is not None
    # The recorder's runs fail at the instance; the eventual-consistency one at the
    # security group the stack had just created.
    failing = "aws_security_group." if path.stem.endswith(".NotFound") else "aws_instance."
    assert error.failure.resource.startswith(failing)
    if path.stem in EXPECTED:
        assert (error.scope, error.retryable) == EXPECTED[path.stem]
    if not error.retryable:
        assert error.hint


def _pulumi_diagnostics(path: Path) -> list[Diagnostic]:
    from pulumi.automation.events import EngineEvent

    from skyc.stacks.pulumi_events import diagnostic as pulumi_diagnostic

    events = [EngineEvent.from_json(json.loads(line)) for line in path.read_text().splitlines()]
    return [d for d in map(pulumi_diagnostic, events) if d is not None]


def test_every_recorded_code_has_its_pulumi_form() -> None:
    assert [p.name for p in PULUMI] == [p.name for p in RECORDED]


@pytest.mark.parametrize("path", PULUMI, ids=lambda p: p.stem)
def test_same_verdict_from_pulumi_events(path: Path) -> None:
    pytest.importorskip("pulumi", reason="the Pulumi SDK (skyc[pulumi]) is not installed")
    [diag] = _pulumi_diagnostics(path)
    assert diag.engine == "pulumi" and diag.address and diag.address.startswith("urn:pulumi:")
    assert "error occurred" not in diag.summary
    by_pulumi = classify_error("aws", [diag], placement=PLACEMENT)
    by_terraform = classify_error("aws", _diagnostics(FIXTURES / path.name), placement=PLACEMENT)
    assert by_pulumi is not None and by_terraform is not None
    assert (by_pulumi.code, by_pulumi.scope, by_pulumi.retryable) == (
        by_terraform.code, by_terraform.scope, by_terraform.retryable)
    assert by_pulumi.code == path.stem and by_pulumi.failure.resource == diag.address


def _diag(summary: str, address: str = "aws_instance.node_0") -> Diagnostic:
    line: dict[str, Any] = {
        "@level": "error", "type": "diagnostic",
        "diagnostic": {"severity": "error", "summary": summary, "detail": "", "address": address},
    }
    diag = diagnostic(line)
    assert diag is not None
    return diag


@pytest.mark.parametrize("code", sorted(EXPECTED))
def test_every_listed_code_in_the_recorded_shape(code: str) -> None:
    # The shape of the recorded lines, with each code the failover loop relies on.
    summary = ("creating EC2 Instance: operation error EC2: RunInstances, https response "
               f"error StatusCode: 400, RequestID: x, api error {code}: message")
    error = classify_error("aws", [_diag(summary)], placement=PLACEMENT)
    assert error is not None
    assert (error.code, error.scope, error.retryable) == (code, *EXPECTED[code])


def test_unknown_failures_are_left_unclassified() -> None:
    diag = _diag("collecting instance settings: couldn't find resource")
    assert classify_error("aws", [diag], placement=PLACEMENT) is None
    assert classify_error("aws", [], placement=PLACEMENT) is None


def test_first_classifiable_diagnostic_wins() -> None:
    diags = [_diag("something else"),
             _diag("api error VcpuLimitExceeded: limit", "aws_instance.node_1")]
    error = classify_error("aws", diags, placement=PLACEMENT)
    assert error is not None and error.failure.resource == "aws_instance.node_1"


@pytest.mark.parametrize("cloud", ["local", "ssh"])
def test_local_and_ssh_have_nothing_to_classify(cloud: str) -> None:
    assert classify_error(cloud, [_diag("api error InsufficientInstanceCapacity: x")]) is None
