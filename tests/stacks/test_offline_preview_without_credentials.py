"""Without a Pulumi CLI, `skyc plan --engine pulumi` shows the offline preview (the
program under Pulumi's mock runtime: no cloud is read) even with no credentials, so a
CI job without cloud keys can show reviewers what would be created. No Pulumi CLI can
be installed here; the SDKs can."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.plan_diff.test_plan_diff import home, skyc

__all__ = ["home"]

pytest.importorskip("pulumi_aws", reason="the Pulumi SDKs (skyc[pulumi]) are not installed")
TASK = str(Path(__file__).resolve().parents[2] / "examples" / "train-a100.yaml")


@pytest.mark.skipif(shutil.which("pulumi") is not None,
                    reason="a Pulumi CLI is installed: plan then runs the real preview")
@pytest.mark.parametrize("cloud", ["aws", "azure"])
def test_offline_preview_needs_no_credentials(home: Path, cloud: str) -> None:
    out = skyc(home, "plan", TASK, "--engine", "pulumi", "--infra", cloud, "--format", "json")
    assert out.returncode == 0, out.stderr
    [stack] = json.loads(out.stdout)["stacks"]
    assert stack["status"] == "ok" and stack["preview"] == "offline", stack["note"]
    assert stack["summary"].get("create", 0) > 0
    assert all(rc["inputs"] is not None for rc in stack["resource_changes"])
