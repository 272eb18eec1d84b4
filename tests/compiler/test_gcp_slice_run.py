"""A multi-host TPU slice is one placed node whose every worker is a node of the cluster:
``skyc apply`` runs the task's setup and run on all of them, with ranks and the
workers' IPs, as SkyPilot does for TPU pods.

No TPU slice can exist here, so the provisioning step is replaced by the cluster it
would give (4 workers, as the GCP outputs of a ``tpu-v4-32`` make them), with local
nodes standing in for the workers; the stage order and the runtime are the real ones.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import skyc.launch as launch_module
from skyc.launch import LaunchOptions, launch
from skyc.nodes import ClusterInfo, Node
from skyc.optimizer.plan import Placement
from skyc.task.loader import load_tasks

V4_32 = Placement(cloud="gcp", region="us-central2", zone="us-central2-b", instance_type="TPU-VM",
                  accelerators={"tpu-v4-32": 1}, hourly_cost=51.52)


class _Reporter:
    def __init__(self) -> None:
        self.lines: list[tuple[str, str]] = []

    def stage(self, name: str, detail: str = "") -> None: ...
    def plan(self, plan: Any) -> None: ...
    def attempt(self, attempt: Any, next_placement: Any) -> None: ...
    def engine_event(self, event: Any) -> None: ...

    def log_line(self, node: str, line: str) -> None:
        self.lines.append((node, line))


def test_every_worker_of_a_multi_host_slice_runs_the_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SKYC_HOME", str(tmp_path / "home"))
    workers = ClusterInfo(
        name="tpu", cloud="gcp", region=V4_32.region, zone=V4_32.zone,
        workspace=str(tmp_path / "workspace"),
        nodes=[Node(name="head" if i == 0 else f"worker{i}", rank=i, transport="local",
                    ip="127.0.0.1", node_dir=str(tmp_path / f"worker{i}")) for i in range(4)])
    monkeypatch.setattr(launch_module, "_provision",
                        lambda *args: (workers, V4_32, []))
    task_file = tmp_path / "task.yaml"
    task_file.write_text(
        "name: tpu\nresources:\n  accelerators: tpu-v4-32\n  infra: gcp/us-central2\n"
        "setup: echo setup-$SKYPILOT_NODE_RANK\n"
        "run: echo run-$SKYPILOT_NODE_RANK-of-$SKYPILOT_NUM_NODES\n")
    reporter = _Reporter()
    result = launch(load_tasks(task_file).tasks, LaunchOptions(), reporter)
    assert result.exit_code == 0, result.failure
    said = {line.strip() for _, line in reporter.lines}
    assert {f"run-{rank}-of-4" for rank in range(4)} <= said
    assert {f"setup-{rank}" for rank in range(4)} <= said
