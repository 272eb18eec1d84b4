"""A local stack with the real terraform binary: create, re-plan clean, destroy."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from skyc.apply.provision import plan_changes, provision, teardown
from skyc.errors import ConfigError
from skyc.model.nodes import ClusterInfo
from skyc.model.plan import Placement
from skyc.settings.config import SkycConfig
from skyc.stacks import ProgressEvent
from skyc.task.candidate import ResourceCandidate
from tests.support.terraform import requires_terraform, skyc_home

__all__ = ["skyc_home"]

pytestmark = requires_terraform


def _placement(n: int) -> Placement:
    return Placement(cloud="local", num_nodes=n, hourly_cost=0.0)


def test_local_cluster_lifecycle(skyc_home: Path) -> None:
    candidate = ResourceCandidate(index=0, labels={"team": "ml"})
    events: list[ProgressEvent] = []
    info = provision("loc", _placement(2), candidate, config=SkycConfig(), progress=events.append)

    workspace = skyc_home / "clusters" / "loc"
    assert [n.name for n in info.nodes] == ["head", "worker1"]
    assert all(n.transport == "local" and n.ip == "127.0.0.1" for n in info.nodes)
    for node in info.nodes:
        assert node.node_dir is not None and Path(node.node_dir).is_dir()
        assert Path(node.node_dir).parent == workspace / "nodes"
    assert {e.address for e in events if e.kind == "complete"} == {
        "terraform_data.node_0", "terraform_data.node_1"
    }
    saved = ClusterInfo.model_validate_json((workspace / "cluster.json").read_text())
    assert saved == info
    assert list((workspace / "logs").glob("*-apply.log"))

    diff = plan_changes("loc", _placement(2), candidate, config=SkycConfig())
    assert not diff.has_changes and diff.summary() == {"no-op": 2}
    assert diff.exit_code == 0

    grown = plan_changes("loc", _placement(3), candidate, config=SkycConfig())
    assert grown.exit_code == 2
    assert [(c.address, c.action) for c in grown.changes if c.action != "no-op"] == [
        ("terraform_data.node_2", "create")
    ]

    teardown("loc")
    assert not (workspace / "nodes").exists()
    assert sorted(p.name for p in workspace.iterdir()) == ["logs"]


def test_teardown_of_unknown_cluster_is_a_clear_error(skyc_home: Path) -> None:
    with pytest.raises(ConfigError, match="no cluster named 'ghost'"):
        teardown("ghost")


def test_stack_and_state_hold_no_private_key(skyc_home: Path, tmp_path: Path) -> None:
    # The aws stack is written (not applied) to check where the key material goes.
    from skyc.compiler import build_stack, workspace_values
    from skyc.stacks import write_stack

    workspace = tmp_path / "ws"
    placement = Placement(cloud="aws", region="us-east-1", instance_type="t3.micro",
                          hourly_cost=0.01)
    stack = build_stack("k", placement, ResourceCandidate(index=0), config=SkycConfig(),
                        workspace=workspace)
    write_stack(stack, workspace, workspace_values(stack, workspace))
    private = workspace / "keys" / "id_ed25519"
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    assert "PRIVATE KEY" in private.read_text()
    values = json.loads((workspace / "terraform.tfvars.json").read_text())
    assert values["ssh_public_key"].startswith("ssh-ed25519 ")
    for path in (workspace / "main.tf.json", workspace / "terraform.tfvars.json"):
        assert "PRIVATE KEY" not in path.read_text()
