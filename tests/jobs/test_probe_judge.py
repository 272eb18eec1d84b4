"""How a managed job's run is judged from its nodes' job tables (skyc.jobs.probe)."""

from __future__ import annotations

from typing import Any

import pytest

from skyc.jobs.probe import _judge


def _row(status: str, code: int | None = None, cancelled: str | None = None) -> dict[str, Any]:
    return {"job_id": 7, "status": status, "exit_code": code, "cancelled": cancelled}


@pytest.mark.parametrize(("tables", "state", "why"), [
    ({"head": [_row("SUCCEEDED", 0)], "worker1": [_row("SUCCEEDED", 0)]},
     "succeeded", "every node exited 0"),
    ({"head": [_row("RUNNING")], "worker1": [_row("SUCCEEDED", 0)]}, "running", "running"),
    ({"head": [_row("SUCCEEDED", 0)], "worker1": None}, "lost", "node worker1 does not answer"),
    ({"head": [{"job_id": 6, "status": "RUNNING"}]}, "lost", "node head no longer has the job"),
    ({"head": [_row("FAILED_SETUP", 3)]}, "failed_setup", "setup exited with code 3 on head"),
    ({"head": [_row("FAILED", None)]}, "lost", "ended without an exit code"),
    ({"head": [_row("FAILED", 2)], "worker1": [_row("FAILED", 5)]},
     "failed", "the run exited with code 2 on head"),
    ({"head": [_row("CANCELLED", cancelled="user")]}, "cancelled", "cancelled on head"),
    ({"head": [_row("CANCELLED", cancelled="autostop")]}, "lost", "was stopped (autostop)"),
    ({"head": [_row("CANCELLED", cancelled="user")], "worker1": [_row("FAILED", 1)]},
     "failed", "exited with code 1 on worker1"),
])
def test_a_verdict_from_the_nodes_tables(tables: dict[str, Any], state: str, why: str) -> None:
    verdict = _judge(tables, 7)
    assert verdict.state == state and why in verdict.why, verdict
