"""What `status --refresh` concludes from the nodes' power states (pure: decide(),
the AWS target's reading of refreshed resources, the cost of a stopped cluster)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from skyc.apply.reconcile import Observed, decide, hourly_cost_after, power_states
from skyc.stacks.engine import RefreshedResource
from skyc.state.database import ClusterRecord

UP = {"name": "c", "cloud": "aws", "status": "UP", "launched_at": 1.0,
      "nodes": [{"name": "head"}, {"name": "worker1"}]}
NODES = ("aws_instance.node_0", "aws_instance.node_1")


def _decide(seen: Observed, **record: Any) -> tuple[str, str]:
    return decide(ClusterRecord(**{**UP, **record}), seen)


def test_every_node_stopped_outside_skyc_is_stopped_with_how_to_resume() -> None:
    status, note = _decide(Observed("/ws", stack=True, managed=20, stopped=NODES))
    assert status == "STOPPED"
    assert note.startswith("stopped outside skyc: aws_instance.node_0, aws_instance.node_1")
    assert "`skyc start c` resumes it" in note and "`skyc destroy c`" in note
    # Stopped by skyc itself: no note.
    assert _decide(Observed("/ws", stack=True, managed=20, stopped=NODES),
                   status="STOPPED") == ("STOPPED", "")


def test_some_nodes_stopped_is_init_naming_both_halves() -> None:
    seen = Observed("/ws", stack=True, managed=20, stopped=NODES[1:], running=NODES[:1])
    status, note = _decide(seen)
    assert status == "INIT"
    assert "stopped outside skyc: aws_instance.node_1, while aws_instance.node_0 run" in note
    assert "`skyc apply` starts them again" in note


def test_running_nodes_are_up_and_a_stopped_cluster_started_elsewhere_says_so() -> None:
    running = Observed("/ws", stack=True, managed=20, running=NODES)
    assert _decide(running) == ("UP", "")
    status, note = _decide(running, status="STOPPED")
    assert status == "STOPPED"
    assert "started outside skyc" in note and "`skyc start c` records their addresses" in note


def test_gone_resources_win_over_power_states() -> None:
    seen = Observed("/ws", stack=True, managed=18, gone=("aws_instance.node_1",),
                    stopped=NODES[:1])
    status, note = _decide(seen)
    assert status == "INIT" and "deleted outside skyc: aws_instance.node_1" in note


def test_the_aws_target_reads_instance_states_and_ignores_other_resources() -> None:
    read = [
        RefreshedResource(address="aws_instance.node_0", type="aws_instance",
                          values={"instance_state": "stopped"}),
        RefreshedResource(address="aws_instance.node_1", type="aws_instance",
                          values={"instance_state": "running"}),
        RefreshedResource(address="aws_instance.node_2", type="aws_instance",
                          values={"instance_state": "stopping"}),
        # the power input is its own resource: not a node
        RefreshedResource(address="aws_ec2_instance_state.node_0",
                          type="aws_ec2_instance_state", values={"state": "stopped"}),
        RefreshedResource(address="aws_vpc.main", type="aws_vpc", values={}),
    ]
    assert power_states("aws", read) == (
        ("aws_instance.node_0", "aws_instance.node_2"), ("aws_instance.node_1",))
    # A target that cannot tell reports nothing either way.
    assert power_states("local", read) == ((), ())


def test_a_refresh_that_stops_a_cluster_charges_its_disks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKYC_HOME", str(tmp_path))
    workspace = tmp_path / "clusters" / "c"
    workspace.mkdir(parents=True)
    placement = {"cloud": "aws", "region": "us-east-1", "zone": "use1-az1",
                 "instance_type": "m6i.large", "num_nodes": 2, "hourly_cost": 0.192}
    (workspace / "request.json").write_text(json.dumps(
        {"placement": placement, "candidate": {"index": 0, "disk_size": 100}}))
    record = ClusterRecord(**UP)
    assert hourly_cost_after(record, "STOPPED") == pytest.approx(2 * 100 * 0.08 / 730)
    stopped = ClusterRecord(**{**UP, "status": "STOPPED"})
    assert hourly_cost_after(stopped, "UP") == pytest.approx(0.192)
    assert hourly_cost_after(record, "UP") is None        # no change
    assert hourly_cost_after(record, "INIT") is None
    # Without its recorded request the cost is left as it is.
    assert hourly_cost_after(ClusterRecord(**{**UP, "name": "other"}), "STOPPED") is None


def test_a_pulumi_deployment_s_instances_are_read_the_same_way() -> None:
    from skyc.stacks.pulumi_events import refreshed_resources

    urn = "urn:pulumi:box::skyc-box::"
    deployment = {"resources": [
        {"urn": urn + "pulumi:pulumi:Stack::skyc-box-box", "type": "pulumi:pulumi:Stack"},
        {"urn": urn + "pulumi:providers:aws::default", "type": "pulumi:providers:aws"},
        {"urn": urn + "aws:ec2/instance:Instance::node_0", "type": "aws:ec2/instance:Instance",
         "outputs": {"instanceState": "stopped"}},
        {"urn": urn + "aws:ec2/vpc:Vpc::main", "type": "aws:ec2/vpc:Vpc", "outputs": {}},
    ]}
    read = refreshed_resources(deployment)
    assert [r.type for r in read] == ["aws:ec2/instance:Instance", "aws:ec2/vpc:Vpc"]
    assert power_states("aws", read) == ((urn + "aws:ec2/instance:Instance::node_0",), ())


def test_the_cloud_view_of_an_unknown_cluster_is_empty(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from skyc.apply.reconcile import cloud_view

    monkeypatch.setenv("SKYC_HOME", str(tmp_path))
    assert cloud_view("nothing") == ""


def test_only_targets_that_read_node_states_are_asked_after_a_loss() -> None:
    from skyc.compiler import tells_node_states

    assert tells_node_states("aws")
    assert not tells_node_states("local") and not tells_node_states("ssh")

