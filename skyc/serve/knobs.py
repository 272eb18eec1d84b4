"""The controller's timings, each from an environment variable with SkyPilot's default.

``SKYC_SERVE_POLL_S`` (3): how often replicas are probed and the autoscaler decides.
``SKYC_SERVE_QPS_WINDOW_S`` (60): the window requests per second are counted over.
``SKYC_SERVE_FAIL_AFTER_S`` (180): how long a replica that was ready may fail its
probe (its processes still running) before it is replaced.
``SKYC_SERVE_DOWN_TIMEOUT_S`` (600): how long ``serve down`` waits for the controller.
``SKYC_SERVE_RETRY_TEAR_S`` (30): how long after a failed teardown of a replica's
cluster (e.g. its engine's state still locked by a launch a killed controller left
running) it is tried again.
"""

from __future__ import annotations

import os

DEFAULT_INITIAL_DELAY_S = 1200.0
DEFAULT_PROBE_TIMEOUT_S = 15.0
DEFAULT_UPSCALE_DELAY_S = 300.0
DEFAULT_DOWNSCALE_DELAY_S = 1200.0
# Launches that fail in a row (provisioning, setup, never ready) before the service
# stops launching and is FAILED: a broken task is reported, not retried forever.
MAX_LAUNCH_FAILURES = 3
# How long a replica being scaled down keeps its requests in flight before it goes.
DRAIN_S = 30.0


def _seconds(name: str, default: float, least: float) -> float:
    raw = os.environ.get(name)
    try:
        return max(least, float(raw)) if raw else default
    except ValueError:
        return default


def poll_s() -> float:
    return _seconds("SKYC_SERVE_POLL_S", 3.0, 0.05)


def qps_window_s() -> float:
    return _seconds("SKYC_SERVE_QPS_WINDOW_S", 60.0, 0.5)


def fail_after_s() -> float:
    return _seconds("SKYC_SERVE_FAIL_AFTER_S", 180.0, 0.0)


def down_timeout_s() -> float:
    return _seconds("SKYC_SERVE_DOWN_TIMEOUT_S", 600.0, 1.0)


def retry_tear_s() -> float:
    return _seconds("SKYC_SERVE_RETRY_TEAR_S", 30.0, 0.1)
