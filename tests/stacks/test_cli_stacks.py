"""``skyc compile`` and ``skyc destroy`` through the real command line."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from skyc.apply.provision import provision
from skyc.model.owner import owner_hash
from skyc.model.plan import Placement
from skyc.settings.config import SkycConfig
from skyc.task.candidate import ResourceCandidate
from tests.support.terraform import requires_terraform, skyc_home

__all__ = ["skyc_home"]

TASK = """\
name: train
num_nodes: 2
resources:
  accelerators: A10G:1
  ports: 8080
  labels: {team: ml}
run: python train.py
"""


def _skyc(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skyc", *args], capture_output=True, text=True, timeout=120,
        cwd=cwd, env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        stdin=subprocess.DEVNULL,
    )


def test_an_unnamed_task_compiles_to_its_owners_generated_cluster(
    skyc_home: Path, tmp_path: Path
) -> None:
    """No name and no -c: the cluster is ``skyc-<hash>-<user>`` of the config's user, the
    same on every run (compiling again into the same folder changes nothing), and its
    cloud names carry the owner's hash."""
    skyc_home.mkdir(parents=True, exist_ok=True)
    (skyc_home / "config.yaml").write_text("user: ci-bot@runner\n")
    (tmp_path / "task.yaml").write_text(TASK.replace("name: train\n", ""))
    runs = []
    for _ in range(2):
        result = _skyc("compile", "task.yaml", "-o", "out", "--infra", "aws/us-east-1",
                       cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        runs.append(json.loads((tmp_path / "out" / "plan.json").read_text())["stacks"])
    assert runs[0] == runs[1]
    cluster = runs[0][0]["cluster"]
    assert re.fullmatch(r"skyc-[0-9a-f]{6}-ci-bot", cluster), cluster
    stack = json.loads((tmp_path / "out" / cluster / "main.tf.json").read_text())
    key_pair = stack["resource"]["aws_key_pair"]["main"]
    assert key_pair["key_name"] == f"skyc-{cluster}-{owner_hash('ci-bot@runner')}"
    assert key_pair["tags"]["skyc-owner"] == "ci-bot@runner"


def test_help_of_each_command(tmp_path: Path) -> None:
    for command in ("compile", "destroy", "down"):
        result = _skyc(command, "--help", cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert "Usage" in result.stdout and "Traceback" not in result.stderr


def test_compile_writes_plan_and_stacks_byte_identically(
    skyc_home: Path, tmp_path: Path
) -> None:
    (tmp_path / "task.yaml").write_text(TASK)
    runs = []
    for out in ("a", "b"):
        result = _skyc("compile", "task.yaml", "-o", out, "--infra", "aws/us-east-1",
                       cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        runs.append({p.relative_to(tmp_path / out): p.read_bytes()
                     for p in (tmp_path / out).rglob("*") if p.is_file()})
    assert runs[0] == runs[1]
    network = Path("network-aws-us-east-1/main.tf.json")  # the region's, shared
    assert set(runs[0]) == {Path("plan.json"), Path("train/main.tf.json"), network}
    plan = json.loads(runs[0][Path("plan.json")])
    assert plan["stacks"] == [
        {"cluster": "train", "task": "train", "path": "train/main.tf.json"},
        {"cluster": "network-aws-us-east-1", "task": "train", "path": str(network)}]
    assert "aws_vpc" in json.loads(runs[0][network])["resource"]
    stack = json.loads(runs[0][Path("train/main.tf.json")])
    instances = stack["resource"]["aws_instance"]
    assert sorted(instances) == ["node_0", "node_1"]
    assert instances["node_1"]["tags"]["team"] == "ml"
    assert stack["resource"]["aws_key_pair"]["main"]["public_key"] == "${var.ssh_public_key}"
    assert not skyc_home.exists() or not list(skyc_home.rglob("id_ed25519"))


def test_compile_bad_task_is_a_clean_error(skyc_home: Path, tmp_path: Path) -> None:
    (tmp_path / "task.yaml").write_text("resources: {acelerators: A100}\n")
    result = _skyc("compile", "task.yaml", "-o", "out", cwd=tmp_path)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr and "error" in result.stderr


def test_destroy_refuses_without_tty_or_yes(skyc_home: Path, tmp_path: Path) -> None:
    result = _skyc("destroy", "anything", cwd=tmp_path)
    assert result.returncode != 0
    assert "--yes" in result.stderr and "Traceback" not in result.stderr


@requires_terraform
def test_down_yes_destroys_a_local_cluster(skyc_home: Path, tmp_path: Path) -> None:
    info = provision("loc", Placement(cloud="local", num_nodes=2, hourly_cost=0),
                     ResourceCandidate(index=0), config=SkycConfig())
    dirs = [Path(n.node_dir or "") for n in info.nodes]
    assert all(d.is_dir() for d in dirs)
    result = _skyc("down", "loc", "--yes", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "destroyed" in result.stdout
    assert not any(d.exists() for d in dirs)
    assert sorted(p.name for p in (skyc_home / "clusters" / "loc").iterdir()) == ["logs"]
