"""A multi-host TPU slice is one placed node whose every worker is a node of the cluster:
``skyc apply`` and ``skyc exec`` run the task's setup and run on all of them, with
ranks and the workers' IPs, as SkyPilot does for TPU pods.

No TPU slice can exist here, so the provisioning step is replaced by the cluster it
would give (4 workers, as the GCP outputs of a ``tpu-v4-32`` make them), with local
nodes standing in for the workers; the stage order and the runtime are the real ones.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import skyc.apply.launch as launch_module
from skyc.apply.launch import LaunchOptions, launch
from skyc.model.nodes import ClusterInfo, Node
from skyc.model.plan import Placement
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


def _workers(tmp_path: Path, workspace: Path) -> ClusterInfo:
    return ClusterInfo(
        name="tpu", cloud="gcp", region=V4_32.region, zone=V4_32.zone,
        workspace=str(workspace),
        nodes=[Node(name="head" if i == 0 else f"worker{i}", rank=i, transport="local",
                    ip="127.0.0.1", node_dir=str(tmp_path / f"worker{i}")) for i in range(4)])


def test_every_worker_of_a_multi_host_slice_runs_the_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SKYC_HOME", str(tmp_path / "home"))
    workers = _workers(tmp_path, tmp_path / "workspace")
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


def test_exec_on_a_multi_host_slice_runs_on_every_worker(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from skyc.state.database import StateDB

    home = tmp_path / "home"
    monkeypatch.setenv("SKYC_HOME", str(home))
    workspace = home / "clusters" / "tpu"
    workspace.mkdir(parents=True)
    workers = _workers(tmp_path, workspace)
    (workspace / "cluster.json").write_text(workers.model_dump_json())
    with StateDB() as db:
        db.upsert_cluster_from_placement("tpu", V4_32, status="UP", engine="pulumi")
        db.mark_cluster_up("tpu", workers, V4_32)
    task_file = tmp_path / "task.yaml"
    task_file.write_text("run: echo run-$SKYPILOT_NODE_RANK-of-$SKYPILOT_NUM_NODES\n")
    env = {**os.environ, "SKYC_HOME": str(home),
           "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    r = subprocess.run([sys.executable, "-m", "skyc", "exec", "tpu", str(task_file)],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    for rank in range(4):
        assert f"run-{rank}-of-4" in r.stdout
