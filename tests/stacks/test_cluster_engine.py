"""Each cluster records the engine it was created with; status, destroy and a later
apply use it, and a cluster does not silently move to another engine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from skyc.apply.provision import plan_changes
from skyc.errors import ConfigError
from skyc.model.plan import Placement
from skyc.settings.config import SkycConfig
from skyc.task.candidate import ResourceCandidate
from tests.support.terraform import TERRAFORM_ENV, requires_terraform

ROOT = Path(__file__).resolve().parents[2]
TASK = "name: eng\nnum_nodes: 2\nresources:\n  infra: local\nrun: 'true'\n"


def _skyc(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **TERRAFORM_ENV, "PYTHONPATH": str(ROOT),
           "SKYC_HOME": str(home / ".skyc"), "HOME": str(home), "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "skyc", *args], capture_output=True,
                          text=True, env=env, cwd=home, timeout=240, stdin=subprocess.DEVNULL)


@requires_terraform
def test_recorded_engine_is_used_and_kept(tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text(TASK)
    up = _skyc(tmp_path, "apply", "t.yaml", "--yes")
    assert up.returncode == 0, up.stderr
    assert "(terraform)" in up.stdout + up.stderr
    [row] = json.loads(_skyc(tmp_path, "status", "--format", "json").stdout)["clusters"]
    assert row["engine"] == "terraform"
    refreshed = _skyc(tmp_path, "status", "--refresh", "--format", "json")
    assert json.loads(refreshed.stdout)["clusters"][0]["status"] == "UP", refreshed.stderr
    workspace = tmp_path / ".skyc" / "clusters" / "eng"
    assert (workspace / ".skyc-engine").read_text().strip() == "terraform"
    refused = _skyc(tmp_path, "apply", "t.yaml", "--yes", "--engine", "pulumi")
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert "engines for local: terraform" in refused.stderr
    down = _skyc(tmp_path, "destroy", "eng", "--yes")
    assert down.returncode == 0, down.stderr
    assert not (workspace / "nodes").exists()
    assert json.loads(_skyc(tmp_path, "status", "--format", "json").stdout)["clusters"] == []


def test_a_provisioned_cluster_keeps_its_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SKYC_HOME", str(tmp_path / "home"))
    workspace = tmp_path / "home" / "clusters" / "c"
    workspace.mkdir(parents=True)
    (workspace / "main.tf.json").write_text("{}\n")          # a terraform stack ...
    (workspace / "cluster.json").write_text("{}\n")          # ... that was provisioned
    placement = Placement(cloud="aws", region="us-east-1", instance_type="t3.micro",
                          hourly_cost=0.01)
    with pytest.raises(ConfigError, match="created with terraform") as caught:
        plan_changes("c", placement, ResourceCandidate(index=0), config=SkycConfig(),
                     engine="pulumi")
    assert caught.value.hint and "--engine terraform" in caught.value.hint
    assert sorted(p.name for p in workspace.iterdir()) == ["cluster.json", "main.tf.json"]
