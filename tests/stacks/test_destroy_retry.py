"""A destroy that meets a transient cloud error runs again; any other error is the
user's at once. The engine is a stand-in here: a cloud that fails one delete and not
the next cannot be arranged on purpose against moto. Its failure is a real diagnostic,
recorded from terraform's destroy against moto in a full test run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from skyc.apply import provision
from skyc.errors import ApplyFailed
from skyc.model.plan import Placement
from skyc.stacks.terraform_output import diagnostic
from skyc.task.candidate import ResourceCandidate

FIXTURE = (Path(__file__).resolve().parents[1] / "fixtures" / "errors" / "aws-destroy"
           / "InvalidPermission.NotFound.jsonl")


def _recorded_failure() -> ApplyFailed:
    lines = [json.loads(line) for line in FIXTURE.read_text().splitlines() if line.strip()]
    diagnostics = [d for d in map(diagnostic, lines) if d is not None]
    assert diagnostics
    return ApplyFailed("terraform destroy failed", diagnostics)


class FailingEngine:
    """Fails its first ``failures`` destroys with ``error``, then succeeds."""

    def __init__(self, failures: int, error: ApplyFailed) -> None:
        self.failures, self.error, self.calls = failures, error, 0

    def destroy(self, progress: Any = None) -> None:
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error


@pytest.fixture
def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("SKYC_HOME", str(tmp_path / "home"))
    workspace = provision.cluster_workspace("c1")
    workspace.mkdir(parents=True)
    placement = Placement(cloud="aws", region="us-east-1", zone="use1-az1",
                          instance_type="t3.micro", hourly_cost=0.01)
    (workspace / provision.REQUEST_FILE).write_text(json.dumps({
        "placement": placement.model_dump(mode="json"),
        "candidate": ResourceCandidate(index=0).model_dump(mode="json")}))
    return "c1"


def test_a_transient_error_destroys_again(cluster: str,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    pauses: list[float] = []
    monkeypatch.setattr("time.sleep", pauses.append)
    engine = FailingEngine(2, _recorded_failure())
    provision._destroy(cluster, engine, None)  # type: ignore[arg-type]
    assert engine.calls == 3 and pauses == list(provision.DESTROY_RETRY_PAUSES_S)


def test_a_transient_error_that_stays_is_raised(cluster: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("time.sleep", lambda s: None)
    engine = FailingEngine(10, _recorded_failure())
    with pytest.raises(ApplyFailed):
        provision._destroy(cluster, engine, None)  # type: ignore[arg-type]
    assert engine.calls == 1 + len(provision.DESTROY_RETRY_PAUSES_S)


def test_any_other_error_is_raised_at_once(cluster: str,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("time.sleep", lambda s: pytest.fail("no pause for a lasting error"))
    lasting = ApplyFailed("terraform destroy failed", [diagnostic({
        "@level": "error", "type": "diagnostic", "diagnostic": {
            "severity": "error", "summary": "deleting EC2 Instance", "detail":
            "operation error EC2: TerminateInstances, api error UnauthorizedOperation: no"}})])
    engine = FailingEngine(1, lasting)
    with pytest.raises(ApplyFailed):
        provision._destroy(cluster, engine, None)  # type: ignore[arg-type]
    assert engine.calls == 1
