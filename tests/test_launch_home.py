"""Where `skyc apply` keeps a cluster that has been up (launch.cluster_home)."""

from __future__ import annotations

from skyc.apply.launch import cluster_home
from skyc.state.database import ClusterRecord


def test_a_cluster_that_never_came_up_may_go_anywhere() -> None:
    assert cluster_home(None) is None
    failed = ClusterRecord(name="c", status="FAILED", cloud="aws", region="us-east-1",
                           zone="use1-az1")
    assert cluster_home(failed) is None


def test_a_cluster_that_has_been_up_stays_in_its_zone() -> None:
    up = ClusterRecord(name="c", status="UP", cloud="aws", region="us-east-1",
                       zone="use1-az2", launched_at=1.0)
    assert cluster_home(up) == "aws/us-east-1/use1-az2"
    # Even after a failed update: it has been up, its disks and IPs are there.
    assert cluster_home(up.model_copy(update={"status": "FAILED"})) == "aws/us-east-1/use1-az2"


def test_local_and_ssh_homes_read_like_placements() -> None:
    local = ClusterRecord(name="c", status="UP", cloud="local", region="local", launched_at=1.0)
    assert cluster_home(local) == "local"
    pool = ClusterRecord(name="c", status="UP", cloud="ssh", region="lab", launched_at=1.0)
    assert cluster_home(pool) == "ssh/lab"
