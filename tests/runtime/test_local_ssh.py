"""`skyc ssh` on a local cluster gives a shell on the node: its directory (the synced
workdir), its HOME and rank, as its jobs see them (the tour's own cluster)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.plan_diff.test_plan_diff import home, skyc
from tests.support.terraform import requires_terraform

__all__ = ["home"]

HELLO = str(Path(__file__).resolve().parents[2] / "examples" / "hello.yaml")


@requires_terraform
@pytest.mark.timeout(300)
def test_ssh_on_local_nodes(home: Path) -> None:
    assert skyc(home, "apply", HELLO, "--yes").returncode == 0
    try:
        head = skyc(home, "ssh", "hello", "pwd; echo home=$HOME rank=$SKYPILOT_NODE_RANK")
        assert head.returncode == 0, head.stderr
        nodes = home / ".skyc" / "clusters" / "hello" / "nodes"
        assert head.stdout.splitlines() == [str(nodes / "head" / "sky_workdir"),
                                            f"home={nodes / 'head'} rank=0"]
        worker = skyc(home, "ssh", "hello", "--node", "worker1", "echo rank=$SKYPILOT_NODE_RANK")
        assert worker.stdout.strip() == "rank=1", worker.stderr
        failing = skyc(home, "ssh", "hello", "exit 3")
        assert failing.returncode == 3
    finally:
        skyc(home, "down", "hello", "--yes")
