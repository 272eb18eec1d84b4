"""Autoscaling end to end on ``local`` (real processes, as test_service_local): a load
above the target requests per second scales the service up once the upscale delay
has passed, and back down once the load has been gone for the downscale delay; each
decision is recorded with its reason and shown by ``serve status``. The delays and
the rate's window are small here (SKYC_SERVE_QPS_WINDOW_S, the policy's delays)."""

from __future__ import annotations

import os
import signal
import threading
import time

from tests.e2e.conftest import Skyc
from tests.serve.conftest import (
    alive,
    controller_pids,
    get,
    node_pids,
    ready,
    service_yaml,
    status,
    wait_status,
)

POLICY = ("  readiness_probe: /health\n  replica_policy:\n    min_replicas: 1\n"
          "    max_replicas: 2\n    target_qps_per_replica: 3\n"
          "    upscale_delay_seconds: 1\n    downscale_delay_seconds: 2\n")


def test_scales_up_under_load_and_down_after_the_delay(runner: Skyc) -> None:
    runner.env["SKYC_SERVE_QPS_WINDOW_S"] = "1.5"
    runner.write("web.yaml", service_yaml(POLICY))
    url = runner.ok("serve", "up", "web.yaml", "-n", "auto", "-y").stdout.split()[1]
    wait_status(runner, "auto", lambda d: len(ready(d)) == 1)
    assert status(runner, "auto")["decisions"] == []

    stop = threading.Event()
    failures: list[str] = []

    def load() -> None:   # about 20 requests/s, well above 3 per replica
        while not stop.is_set():
            try:
                get(url + "/")
            except OSError as exc:
                failures.append(str(exc))
            time.sleep(0.05)

    loader = threading.Thread(target=load)
    started = time.time()
    loader.start()
    try:
        up = wait_status(runner, "auto", lambda d: len(ready(d)) == 2)
    finally:
        stop.set()
        loader.join()
    ended = time.time()
    assert failures == []
    [rise] = up["decisions"]
    assert (rise["from"], rise["to"]) == (1, 2)
    assert rise["at"] - started >= 1.0   # not before the upscale delay
    assert "upscale_delay_seconds 1" in rise["reason"] and "requests/s" in rise["reason"]

    down = wait_status(runner, "auto", lambda d: len(d["decisions"]) == 2
                       and [r["id"] for r in d["replicas"]] == [1])
    fall = down["decisions"][1]
    assert (fall["from"], fall["to"]) == (2, 1)
    assert fall["at"] - ended >= 2.0   # not before the downscale delay
    assert "downscale_delay_seconds 2" in fall["reason"]
    assert runner.clusters() == ["auto-1"]
    shown = runner.ok("serve", "status", "auto").stdout
    assert "autoscaler" in shown and "1 -> 2" in shown and "2 -> 1" in shown

    # With its controller dead, `serve down` tears the replicas down itself.
    [pid] = controller_pids(runner.home)
    os.kill(pid, signal.SIGKILL)
    while alive(pid):
        time.sleep(0.05)
    gone = runner.ok("serve", "down", "auto", "-y")
    assert "tearing down replica 1 (cluster auto-1)" in gone.stderr
    assert runner.clusters() == [] and node_pids(runner.home) == []
    assert controller_pids(runner.home) == []
