"""SkyPilot's job vocabulary on a local cluster: ``exec CLUSTER 'cmd'``, ``queue`` with no
cluster, ``cancel CLUSTER -a``, and ``down -a`` with nothing to destroy."""

from __future__ import annotations

from pathlib import Path

from skyc.model.nodes import ClusterInfo
from tests.runtime.test_cli_jobs import save_cluster, skyc


def test_exec_runs_an_inline_command(local_cluster: ClusterInfo, skyc_home: Path) -> None:
    save_cluster(skyc_home, local_cluster)
    out = skyc(skyc_home, "exec", "loc", "echo inline-$SKYPILOT_NODE_RANK")
    assert out.returncode == 0, out.stderr
    assert "(head, rank=0) inline-0" in out.stdout
    assert "rank=1" not in out.stdout  # a command runs on one node unless --num-nodes
    out = skyc(skyc_home, "exec", "loc", "--num-nodes", "2", "echo both-$SKYPILOT_NODE_RANK")
    assert out.returncode == 0, out.stderr
    assert "both-0" in out.stdout and "both-1" in out.stdout
    out = skyc(skyc_home, "exec", "loc", "missing.yaml")
    assert out.returncode == 1 and "missing.yaml" in out.stderr
    assert "Traceback" not in out.stderr


def test_queue_without_a_cluster_lists_every_cluster(local_cluster: ClusterInfo,
                                                     skyc_home: Path) -> None:
    save_cluster(skyc_home, local_cluster)
    assert skyc(skyc_home, "exec", "loc", "echo one").returncode == 0
    for args in (("queue",), ("queue", "-a")):
        out = skyc(skyc_home, *args)
        assert out.returncode == 0, out.stderr
        rows = [line.split() for line in out.stdout.splitlines()]
        assert any(row[:2] == ["loc", "1"] and "SUCCEEDED" in row for row in rows), out.stdout


def test_cancel_all_stops_every_unfinished_job(local_cluster: ClusterInfo, skyc_home: Path,
                                               tmp_path: Path) -> None:
    save_cluster(skyc_home, local_cluster)
    task = tmp_path / "sleep.yaml"
    task.write_text("run: sleep 100\n")
    for _ in range(2):
        assert skyc(skyc_home, "exec", "loc", str(task), "--detach").returncode == 0
    out = skyc(skyc_home, "cancel", "loc", "-a")
    assert out.returncode == 0, out.stderr
    assert "job 1 on loc: cancelled" in out.stdout and "job 2 on loc: cancelled" in out.stdout
    out = skyc(skyc_home, "queue", "loc")
    statuses = [line.split()[5] for line in out.stdout.splitlines()
                if line.split()[:1] == ["loc"]]
    assert statuses == ["CANCELLED", "CANCELLED"], out.stdout
    out = skyc(skyc_home, "cancel", "loc")
    assert out.returncode == 1 and "give job ids or -a" in out.stderr


def test_down_all_with_no_clusters(skyc_home: Path) -> None:
    out = skyc(skyc_home, "down", "-a", "--yes")
    assert out.returncode == 0 and "no clusters to destroy" in out.stdout
    out = skyc(skyc_home, "down")
    assert out.returncode == 1 and "pass -a" in out.stderr


def test_exec_infra_must_match_the_cluster(local_cluster: ClusterInfo, skyc_home: Path) -> None:
    save_cluster(skyc_home, local_cluster)
    out = skyc(skyc_home, "exec", "loc", "--infra", "aws", "echo no")
    assert out.returncode == 1 and "--infra aws: cluster 'loc' runs on local" in out.stderr
    assert "no" not in out.stdout
    out = skyc(skyc_home, "exec", "loc", "--infra", "LOCAL", "echo yes")
    assert out.returncode == 0 and "yes" in out.stdout, out.stderr
