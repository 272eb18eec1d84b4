"""``skyc exec / queue / logs / cancel`` as a user runs them: a real skyc process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from skyc.model.nodes import ClusterInfo


def skyc(home: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "skyc", *args], capture_output=True, text=True,
                          env={**os.environ, "SKYC_HOME": str(home), "COLUMNS": "200"},
                          timeout=120, cwd=cwd)


def save_cluster(home: Path, cluster: ClusterInfo) -> None:
    path = home / "clusters" / cluster.name / "cluster.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(cluster.model_dump_json())


def test_exec_streams_prefixed_lines_and_returns_job_exit_code(
        local_cluster: ClusterInfo, skyc_home: Path, tmp_path: Path) -> None:
    save_cluster(skyc_home, local_cluster)
    (tmp_path / "wd").mkdir()
    (tmp_path / "wd" / "data.txt").write_text("payload\n")
    task = tmp_path / "task.yaml"
    task.write_text(
        "name: cli-job\n"
        "num_nodes: 2\n"
        f"workdir: {tmp_path / 'wd'}\n"
        "envs:\n  WHO: world\n"
        "run: |\n"
        "  echo \"hello $WHO from $SKYPILOT_NODE_RANK\"\n"
        "  cat data.txt\n"
        "  [ \"$SKYPILOT_NODE_RANK\" = 1 ] && exit 3\n"
        "  exit 0\n")
    out = skyc(skyc_home, "exec", "loc", str(task))
    assert out.returncode == 3, out.stderr
    assert "(head, rank=0) hello world from 0" in out.stdout
    assert "(worker1, rank=1, ip=127.0.0.1) payload" in out.stdout
    assert "worker1 (rank=1)" in out.stderr and "Traceback" not in out.stderr

    out = skyc(skyc_home, "queue", "loc")
    assert out.returncode == 0, out.stderr
    assert "cli-job" in out.stdout and "FAILED" in out.stdout

    out = skyc(skyc_home, "logs", "loc", "1")  # exits with the job's code
    assert out.returncode == 3, out.stderr
    assert "(worker1, rank=1, ip=127.0.0.1) hello world from 1" in out.stdout

    out = skyc(skyc_home, "logs", "loc", "42")
    assert out.returncode == 1 and "has no job 42" in out.stderr
    assert "Traceback" not in out.stderr


def test_detach_then_cancel(local_cluster: ClusterInfo, skyc_home: Path, tmp_path: Path) -> None:
    save_cluster(skyc_home, local_cluster)
    task = tmp_path / "task.yaml"
    task.write_text("run: sleep 100\n")
    out = skyc(skyc_home, "exec", "loc", str(task), "--detach")
    assert out.returncode == 0, out.stderr
    assert "job 1 started" in out.stderr
    out = skyc(skyc_home, "cancel", "loc", "1")
    assert out.returncode == 0, out.stderr
    out = skyc(skyc_home, "queue", "loc")
    assert "CANCELLED" in out.stdout


def test_missing_cluster_is_a_clear_error(skyc_home: Path, tmp_path: Path) -> None:
    task = tmp_path / "task.yaml"
    task.write_text("run: echo hi\n")
    out = skyc(skyc_home, "exec", "nope", str(task))
    assert out.returncode == 1
    assert "no cluster named 'nope'" in out.stderr and "Traceback" not in out.stderr
    out = skyc(skyc_home, "cancel", "nope", "3")
    assert out.returncode == 1 and "no cluster named 'nope'" in out.stderr


def test_exec_refuses_a_task_larger_than_the_cluster(
        local_cluster: ClusterInfo, skyc_home: Path, tmp_path: Path) -> None:
    save_cluster(skyc_home, local_cluster)
    task = tmp_path / "big.yaml"
    task.write_text(f"num_nodes: {len(local_cluster.nodes) + 2}\nrun: touch ran\n")
    out = skyc(skyc_home, "exec", local_cluster.name, str(task))
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert f"has {len(local_cluster.nodes)} node(s)" in out.stderr
    assert not list(Path(local_cluster.nodes[0].node_dir or "/nonexistent").rglob("ran"))
