"""What a job costs in commands on its nodes (each one a round trip over SSH): once the
agent is on a node, a job with an unchanged workdir takes one command per node before its
phases (the agent check, the synced tree's id and, on the head, the job's id), and the
agent runs from its compiled code."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import Any

import pytest

from skyc.errors import TransportError
from skyc.model.nodes import ClusterInfo
from skyc.runtime import JobSpec, queue, run_job
from skyc.runtime.transport import LocalTransport


def _count_commands(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """Every command each local node runs (recorded, then run as usual)."""
    seen: dict[str, list[str]] = {}
    real = LocalTransport.run

    async def run(self: LocalTransport, command: str, **kwargs: Any) -> Any:
        seen.setdefault(self.node.name, []).append(command)
        return await real(self, command, **kwargs)

    monkeypatch.setattr(LocalTransport, "run", run)
    return seen


def test_a_job_takes_one_command_per_node_before_its_run(
        tmp_path: Path, local_cluster: ClusterInfo, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)  # as on a node
    workdir = tmp_path / "wd"
    workdir.mkdir()
    (workdir / "train.py").write_text("print('hi')\n")
    spec = JobSpec(workdir=str(workdir), run="echo ran")
    assert run_job(local_cluster, spec).status == "SUCCEEDED"  # uploads agent and workdir
    seen = _count_commands(monkeypatch)
    lines: list[str] = []
    result = run_job(local_cluster, spec, on_line=lambda _label, line: lines.append(line))
    assert result.status == "SUCCEEDED" and lines.count("ran") == 2
    for node in ("head", "worker1"):
        first, *rest = seen[node]
        assert "setup_hash=" in first and "probe 0" in first, first
        assert len(rest) == 1 and " run " in rest[0], rest
    assert "job_id=" in seen["head"][0] and "job_id=" not in seen["worker1"][0]
    for i in range(2):  # the agent is imported: the node's Python kept its compiled code
        cache = Path(local_cluster.nodes[i].node_dir or "") / ".skyc" / "__pycache__"
        assert list(cache.glob("agent_*.pyc")), cache


def test_the_agent_check_runs_no_program(
        tmp_path: Path, local_cluster: ClusterInfo, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check that opens every job (the agent, the synced tree's id, the setup's hash)
    reads its files with the shell's builtins: on a worker, where no id is allocated,
    it answers the same with no program on PATH (each ``$(cat ...)`` was two forks)."""
    workdir = tmp_path / "wd"
    workdir.mkdir()
    (workdir / "train.py").write_text("print('hi')\n")
    spec = JobSpec(workdir=str(workdir), setup="echo set", run="echo ran")
    assert run_job(local_cluster, spec).status == "SUCCEEDED"
    seen = _count_commands(monkeypatch)
    assert run_job(local_cluster, spec).status == "SUCCEEDED"
    node = Path(local_cluster.nodes[1].node_dir or "")
    (tree_id,) = [p.read_text().strip() for p in (node / ".skyc" / "sync").glob("*.id")]
    setup_hash = (node / ".skyc" / "setup_hash").read_text().strip()
    empty = tmp_path / "no-programs"
    empty.mkdir()
    out = subprocess.run(["/bin/bash", "-c", seen["worker1"][0]], capture_output=True,
                         text=True, env={"HOME": str(node), "PATH": str(empty)}, check=True)
    assert out.stdout.splitlines() == ["present", f"probe 0 {tree_id}",
                                       f"setup_hash={setup_hash}"], out
    assert out.stderr == ""
    (node / ".skyc" / "setup_hash").unlink()  # a missing file is an empty answer
    out = subprocess.run(["/bin/bash", "-c", seen["worker1"][0]], capture_output=True,
                         text=True, env={"HOME": str(node), "PATH": str(empty)}, check=True)
    assert out.stdout.splitlines()[-1] == "setup_hash=" and out.stderr == ""


def test_ids_keep_counting_across_a_new_agent(local_cluster: ClusterInfo) -> None:
    """The first job on a node (agent missing: uploaded, then the id asked for on its own)
    and the next ones (id allocated with the agent check) number on from each other."""
    ids = [run_job(local_cluster, JobSpec(run="true")).job_id for _ in range(3)]
    assert ids == [1, 2, 3]


def test_a_node_failing_after_the_id_was_allocated_leaves_no_pending_job(
        local_cluster: ClusterInfo, monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker is lost between connecting and its first command (injected: a node
    cannot be made to fail at that instant here). The head had allocated the job's id
    in the same round trip: that job is aborted there, not left waiting."""
    assert run_job(local_cluster, JobSpec(run="true")).status == "SUCCEEDED"
    real = LocalTransport.run

    async def run(self: LocalTransport, command: str, **kwargs: Any) -> Any:
        if self.node.name == "worker1" and "setup_hash=" in command:
            await asyncio.sleep(0.2)  # the head's allocation finishes first
            raise TransportError("node worker1: connection lost")
        return await real(self, command, **kwargs)

    monkeypatch.setattr(LocalTransport, "run", run)
    with pytest.raises(TransportError, match="connection lost"):
        run_job(local_cluster, JobSpec(run="true"))
    monkeypatch.setattr(LocalTransport, "run", real)
    jobs = {j["job_id"]: j["status"] for j in queue(local_cluster)}
    assert set(jobs) == {1, 2}
    assert jobs[1] == "SUCCEEDED" and jobs[2] not in ("PENDING", "RUNNING"), jobs
