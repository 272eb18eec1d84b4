"""The Pulumi SDKs are imported only on the Pulumi path: ``skyc plan --no-diff`` and a
terraform plan import no pulumi module (checked with ``python -X importtime``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.terraform import requires_terraform

ROOT = Path(__file__).resolve().parents[2]


def _imported(tmp_path: Path, *args: str, **extra: str) -> set[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SKYC_HOME": str(tmp_path / "home"),
           "HOME": str(tmp_path), "AWS_EC2_METADATA_DISABLED": "true", **extra}
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "skyc", *args],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [line.split("|")[-1].strip() for line in proc.stderr.splitlines()
             if line.startswith("import time:")]
    assert len(lines) > 50                       # the import log is there
    return set(lines)


def _pulumi(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0].startswith("pulumi"))


def test_plan_no_diff_imports_no_pulumi(tmp_path: Path) -> None:
    task = tmp_path / "t.yaml"
    task.write_text("name: t\nresources:\n  infra: aws/us-east-1\n  accelerators: T4:1\n"
                    "run: 'true'\n")
    assert _pulumi(_imported(tmp_path, "plan", str(task), "--no-diff")) == []


@requires_terraform
def test_terraform_plan_imports_no_pulumi(tmp_path: Path) -> None:
    task = tmp_path / "t.yaml"
    task.write_text("name: t\nresources:\n  infra: local\nrun: 'true'\n")
    assert _pulumi(_imported(tmp_path, "plan", str(task))) == []


def test_the_pulumi_path_does_import_it(tmp_path: Path) -> None:
    pytest.importorskip("pulumi", reason="the Pulumi SDK (skyc[pulumi]) is not installed")
    task = tmp_path / "t.yaml"
    task.write_text("name: t\nresources:\n  infra: aws/us-east-1\n  accelerators: T4:1\n"
                    "run: 'true'\n")
    modules = _imported(tmp_path, "compile", str(task), "-o", "out", "--engine", "pulumi")
    assert _pulumi(modules) == []                # compiling writes the program: no SDK
    modules = _imported(tmp_path, "plan", str(task), "--engine", "pulumi",
                        AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing")
    assert {"pulumi", "pulumi_aws"} <= modules   # the offline preview runs the program
