"""``--engine pulumi`` through the real command line, with no Pulumi CLI on PATH (none can
be installed here): compile writes the program, plan shows the offline preview, and a
target without Pulumi refuses it by name."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pulumi_aws", reason="the Pulumi SDKs (skyc[pulumi]) are not installed")

ROOT = Path(__file__).resolve().parents[2]
TASK = """\
name: train
num_nodes: 2
resources:
  infra: aws/us-east-1
  accelerators: A10G:1
  use_spot: true
run: python train.py
"""


def _skyc(home: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SKYC_"))}
    env.update(PYTHONPATH=str(ROOT), HOME=str(home), SKYC_HOME=str(home / ".skyc"),
               PATH="/usr/bin:/bin", COLUMNS="200", AWS_ACCESS_KEY_ID="testing",
               AWS_SECRET_ACCESS_KEY="testing", AWS_EC2_METADATA_DISABLED="true")
    return subprocess.run([sys.executable, "-m", "skyc", *args], capture_output=True,
                          text=True, timeout=240, cwd=cwd, env=env, stdin=subprocess.DEVNULL)


def test_compile_writes_the_program(tmp_path: Path) -> None:
    (tmp_path / "task.yaml").write_text(TASK)
    result = _skyc(tmp_path, "compile", "task.yaml", "-o", "out", "--engine", "pulumi",
                   cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    files = sorted(p.name for p in (tmp_path / "out" / "train").iterdir())
    assert files == ["Pulumi.yaml", "__main__.py"]
    program = (tmp_path / "out" / "train" / "__main__.py").read_text()
    assert "node_1 = aws.ec2.Instance(" in program and "aws.ec2.InstanceMarketOptionsArgs" \
        not in program and "aws.ec2.InstanceInstanceMarketOptionsArgs(" in program
    assert "ssh-ed25519" not in program
    plan = json.loads((tmp_path / "out" / "plan.json").read_text())
    assert plan["stacks"][0]["engine"] == "pulumi"
    assert plan["stacks"][0]["path"] == "train/__main__.py"


def test_plan_shows_the_offline_preview(tmp_path: Path) -> None:
    (tmp_path / "task.yaml").write_text(TASK)
    result = _skyc(tmp_path, "plan", "task.yaml", "--engine", "pulumi", "--format", "json",
                   cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    [stack] = json.loads(result.stdout)["stacks"]
    assert (stack["engine"], stack["preview"], stack["status"]) == ("pulumi", "offline", "ok")
    by_name = {rc["address"].rsplit("::", 1)[1]: rc for rc in stack["resource_changes"]}
    assert {rc["actions"][0] for rc in stack["resource_changes"]} == {"create"}
    assert by_name["node_1"]["type"] == "aws:ec2/instance:Instance"
    assert by_name["node_1"]["inputs"]["instanceMarketOptions"]["marketType"] == "spot"
    assert stack["summary"] == {"create": len(stack["resource_changes"])}
    table = _skyc(tmp_path, "plan", "task.yaml", "--engine", "pulumi", cwd=tmp_path)
    assert table.returncode == 0, table.stderr
    assert "stack train (pulumi, offline preview)" in table.stdout
    assert "+ node_1 (aws:ec2/instance:Instance)" in table.stdout
    itype = by_name["node_1"]["inputs"]["instanceType"]
    assert f'instanceType = "{itype}"' in table.stdout


def test_a_target_without_pulumi_refuses_it(tmp_path: Path) -> None:
    (tmp_path / "task.yaml").write_text("name: t\nresources:\n  infra: local\nrun: 'true'\n")
    for command in ("plan", "compile"):
        extra = ["-o", "out"] if command == "compile" else []
        result = _skyc(tmp_path, command, "task.yaml", *extra, "--engine", "pulumi",
                       cwd=tmp_path)
        assert result.returncode != 0 and "Traceback" not in result.stderr
        assert "engines for local: terraform" in result.stderr, result.stderr
    assert not (tmp_path / "out").exists()
