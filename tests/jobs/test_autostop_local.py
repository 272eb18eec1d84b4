"""Autostop on local clusters, end to end: the node agent's daemon on the head decides
that the cluster is idle and runs ``skyc destroy`` from there (real processes, the real
terraform binary, nothing mocked)."""

from __future__ import annotations

import json
import time

from tests.e2e.conftest import Skyc, wait_until

SHORT = "0.05"  # minutes: 3 s of idleness


def _task(skyc: Skyc, name: str, run: str, extra: str = "") -> str:
    skyc.write(f"{name}.yaml", f"name: {name}\nresources:\n  infra: local\n{extra}"
               f"run: {run}\n")
    return f"{name}.yaml"


def test_autostop_tears_the_cluster_down_once_idle_not_while_a_job_runs(
        skyc: Skyc) -> None:
    task = _task(skyc, "idle", "sleep 6")
    skyc.ok("apply", task, "--yes", "--detach", "-i", SHORT, "--down")
    started = time.monotonic()
    assert "idle" in skyc.clusters()
    # The job runs for 6 s: the 3 s idle time has not begun.
    time.sleep(4)
    assert "idle" in skyc.clusters()
    events = skyc.ok("status", "-v").stdout
    assert "autostop after 0.05 idle minute(s), down" in events

    assert wait_until(lambda: "idle" not in skyc.clusters(), timeout=60, interval=1)
    assert time.monotonic() - started >= 6 + 3 - 1
    assert not (skyc.workspace("idle") / "cluster.json").exists()
    assert not (skyc.workspace("idle") / "nodes").exists()


def test_resources_autostop_in_the_task_is_honoured_without_a_warning(skyc: Skyc) -> None:
    task = _task(skyc, "auto", "echo ran", "  autostop:\n    idle_minutes: 0\n"
                 "    down: true\n")
    result = skyc.ok("apply", task, "--yes")
    assert "warning" not in result.stderr and "ignored" not in result.stderr, str(result)
    assert "autostop after 0 idle minute(s), down" in result.stderr, str(result)
    assert wait_until(lambda: "auto" not in skyc.clusters(), timeout=60, interval=1)


def test_stop_without_down_is_refused_on_local_and_cancel_keeps_the_cluster(
        skyc: Skyc) -> None:
    task = _task(skyc, "keep", "echo ran")
    skyc.ok("apply", task, "--yes")

    refused = skyc("autostop", "keep", "-i", "5")
    assert refused.returncode != 0 and "--down" in refused.stderr, str(refused)
    assert "Traceback" not in refused.output
    bad = skyc("autostop", "keep")
    assert bad.returncode != 0 and "--cancel" in bad.stderr
    negative = skyc("autostop", "keep", "-i", "-1", "--down")
    assert negative.returncode != 0 and "minutes" in negative.output

    skyc.ok("autostop", "keep", "-i", "30", "--down")
    [row] = json.loads(skyc.ok("status", "--format", "json").stdout)["clusters"]
    assert row["autostop"] == {"idle_minutes": 30.0, "down": True, "wait_for": None}
    assert "UP (autostop 30m, down)" in skyc.ok("status").stdout

    # Long enough that the cancel lands first on a busy machine, short enough to have
    # fired by the end of the sleep had it not been cancelled.
    skyc.ok("autostop", "keep", "-i", "0.15", "--down")
    skyc.ok("autostop", "keep", "--cancel")
    time.sleep(12)
    assert "keep" in skyc.clusters()
    [row] = json.loads(skyc.ok("status", "--format", "json").stdout)["clusters"]
    assert row["autostop"] is None
    skyc.ok("destroy", "keep", "--yes")


def test_autostop_that_cannot_work_is_refused_before_anything_is_created(
        skyc: Skyc) -> None:
    task = _task(skyc, "nostop", "echo ran", "  autostop: 5\n")
    refused = skyc("apply", task, "--yes")
    assert refused.returncode != 0 and "Traceback" not in refused.output
    assert "cannot be stopped, only torn down" in refused.stderr, str(refused)
    assert "down: true" in refused.stderr
    assert skyc.clusters() == []
    assert not (skyc.workspace("nostop") / "cluster.json").exists()
