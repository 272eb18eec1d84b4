"""A service whose replicas can never become ready is reported, not retried forever
(real processes on ``local``, as test_service_local): each failed replica keeps the
tail of its log, its cluster is torn down, and after MAX_LAUNCH_FAILURES launches in
a row the service is FAILED and launches stop."""

from __future__ import annotations

import time

from tests.e2e.conftest import Skyc
from tests.serve.conftest import service_yaml, status, wait_status


def test_replicas_whose_setup_fails_end_in_a_failed_service(runner: Skyc) -> None:
    runner.write("broken.yaml", service_yaml(
        "  readiness_probe: /health\n  replicas: 3\n",
        extra="setup: |\n  echo broken-setup-output\n  exit 3\n"))
    runner.ok("serve", "up", "broken.yaml", "-n", "broken", "-y")

    doc = wait_status(runner, "broken", lambda d: d["status"] == "FAILED"
                      and all(r["log_tail"] for r in d["replicas"]))
    assert "3 launches in a row never became ready" in doc["failure"]
    assert [r["status"] for r in doc["replicas"]] == ["FAILED"] * 3
    for r in doc["replicas"]:
        assert "setup exited with code 3" in r["why"], r
        assert any("broken-setup-output" in line for line in r["log_tail"]), r
    time.sleep(0.7)   # a few more rounds of the controller: nothing new is launched
    again = status(runner, "broken")
    assert [r["id"] for r in again["replicas"]] == [1, 2, 3]
    assert runner.clusters() == []
    shown = runner.ok("serve", "status", "broken").stdout
    assert "FAILED" in shown and "launches in a row" in shown
