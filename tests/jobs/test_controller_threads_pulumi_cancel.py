"""A managed job provisioned through the Pulumi engine, cancelled while ``pulumi up``
runs: the controller's thread stops that CLI process as Ctrl-C does, what it created
is destroyed and the job is CANCELLED. Real skyc processes and the real Automation API.

What is not real: no Pulumi CLI can be installed here, so ``pulumi`` is the stand-in
tests/support/pulumi_standin.py (``STANDIN_SLOW_UP`` holds each creation for minutes;
on SIGINT it finishes the creation in flight, saves its state and exits, as the real
CLI does). It reaches no cloud: the AWS credentials are dummies only the credential
check reads.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Skyc, pid_alive, wait_until
from tests.jobs.conftest import job

pytest.importorskip("pulumi_aws", reason="the Pulumi SDKs (skyc[pulumi]) are not installed")

from tests.support.pulumi_standin import install

SLOW_S = 300


def _calls(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def _creating(log: Path) -> bool:
    """True once ``pulumi up`` is creating a cloud resource (read from its event log)."""
    for call in _calls(log):
        argv = call.get("argv", [])
        if "up" in argv and "--event-log" in argv:
            events = Path(argv[argv.index("--event-log") + 1])
            with_text = events.read_text() if events.exists() else ""
            return '"resourcePreEvent"' in with_text and '"aws:' in with_text
    return False


def _state(home: Path, stack: str) -> list[dict[str, str]]:
    path = home / "pulumi" / f"standin-{stack}.json"
    resources: list[dict[str, str]] = json.loads(path.read_text())["resources"]
    return [r for r in resources if not r["type"].startswith("pulumi:")]


@pytest.fixture
def standin_log(tmp_path: Path) -> Iterator[Path]:
    """The stand-in's call log; a stand-in still running at the end (the test failed
    before the cancel stopped it) is killed."""
    log = tmp_path / "cli-calls.jsonl"
    try:
        yield log
    finally:
        for call in _calls(log):
            with contextlib.suppress(OSError):
                pid = call["pid"]
                argv = Path(f"/proc/{pid}/cmdline").read_bytes()
                if "argv" in call and pid_alive(pid) and b"pulumi_standin.py" in argv:
                    os.kill(pid, signal.SIGKILL)   # that stand-in, not a pid reused since


@pytest.mark.slow
def test_cancel_while_pulumi_up_runs_stops_it_and_leaves_nothing(
        jobs: Skyc, tmp_path: Path, standin_log: Path) -> None:
    log = standin_log
    jobs.env.update({"SKYC_PULUMI_ROOT": str(install(tmp_path / "standin")),
                     "STANDIN_LOG": str(log), "STANDIN_SLOW_UP": str(SLOW_S),
                     "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                     "AWS_EC2_METADATA_DISABLED": "true"})
    jobs.home.mkdir(parents=True, exist_ok=True)
    (jobs.home / "config.yaml").write_text("engine: pulumi\n")
    jobs.write("train.yaml", "name: train\nresources:\n  infra: aws/us-east-1\n  cpus: 2\n"
                             "run: echo never-ran\n")
    jobs.ok("jobs", "launch", "train.yaml", "-y", "-d")
    assert wait_until(lambda: _creating(log), timeout=120), \
        jobs("jobs", "logs", "1", "--controller").stdout
    assert job(jobs, 1)["status"] == "STARTING"
    t0 = time.monotonic()

    out = jobs.ok("jobs", "cancel", "1", timeout=120)

    took = time.monotonic() - t0
    assert "managed job 1: CANCELLED" in out.stdout, str(out)
    assert took < SLOW_S / 4, took
    calls = _calls(log)
    up = [c for c in calls if "up" in c.get("argv", [])]
    assert len(up) == 1
    assert [c["pid"] for c in calls if c.get("signal") == "SIGINT"] == [up[0]["pid"]]
    controller = jobs.ok("jobs", "logs", "1", "--controller").stdout
    assert any("destroy" in c.get("argv", []) for c in calls), controller
    # The up in flight is the first one: the region's shared network's, made before the
    # job's cluster. It goes, since no cluster uses it; the cluster's stack never ran.
    assert "provisioning interrupted" in controller
    assert "removing network-aws-us-east-1 (no cluster uses it any more)" in controller
    network = "network-aws-us-east-1"
    history = json.loads((jobs.home / "pulumi" / f"standin-{network}.json").read_text())
    assert [h["kind"] for h in history["history"]][-2:] == ["up", "destroy"]
    assert history["history"][-2]["result"] == "failed"   # cancelled: the one in flight saved
    assert _state(jobs.home, network) == []           # what up created was destroyed
    assert not (jobs.home / "pulumi" / "standin-skyc-job-1.json").exists()
    assert jobs.clusters() == []
    assert "never-ran" not in jobs.ok("jobs", "logs", "1").stdout
