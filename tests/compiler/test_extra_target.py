"""Adding a target is one folder plus one registration: ``tests/support/lambda_cloud``
(a target named ``lambda``, a Python keyword, in a package named otherwise) is planned,
compiled, applied by terraform and failed over with, through the real CLI in a process
that registers it first. No file outside that folder names it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from skyc.compiler import cloud_names, register, target, target_names, unregister
from tests.compiler.conformance import part_problems

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "tests" / "support" / "lambda_cloud"
PACKAGE = "tests.support.lambda_cloud"
# The CLI, in a process that registers the extra target first (as a plugin's launcher
# would): python -c CODE ARGS... runs skyc with ARGS.
CLI = ("from skyc.compiler import register; "
       f"register('lambda', {PACKAGE!r}); "
       "from skyc.cli import main; main()")

TASK = """\
name: extra
resources:
  infra: lambda
  cpus: 4
num_nodes: 2
run: echo "rank $SKYPILOT_NODE_RANK of $SKYPILOT_NUM_NODES on $(basename $HOME)"
"""


@pytest.fixture
def registered() -> Iterator[None]:
    register("lambda", PACKAGE)
    yield
    unregister("lambda")


def _skyc(home: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SKYC_HOME": str(home), "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", CLI, *args], env=env, cwd=cwd, text=True,
                          capture_output=True, timeout=300)


def test_the_extra_target_conforms_as_the_built_in_ones_do(registered: None) -> None:
    record = target("lambda")
    assert "lambda" in target_names() and "lambda" in cloud_names()
    assert record.problems() == [] and part_problems(record) == []
    present = {p.name for p in FOLDER.glob("*.py")}
    assert {"__init__.py", "target.py", "lowering.py", "errors.py", "outputs.py",
            "credentials.py"} <= present


def test_unregistered_it_is_unknown_again(registered: None) -> None:
    unregister("lambda")
    assert "lambda" not in target_names()
    register("lambda", PACKAGE)  # the fixture removes it again


def test_only_its_own_folder_names_it() -> None:
    """The extra target needed no edit elsewhere: nothing in skyc/ names its package."""
    for path in (ROOT / "skyc").rglob("*.py"):
        assert "lambda_cloud" not in path.read_text(encoding="utf-8"), path


def test_plan_compile_apply_and_failover_with_the_extra_target(tmp_path: Path) -> None:
    (tmp_path / "task.yaml").write_text(TASK)
    home = tmp_path / "home"

    plan = _skyc(home, "plan", "task.yaml", "--no-diff", "--format", "json", cwd=tmp_path)
    assert plan.returncode == 0, plan.stderr
    placement = json.loads(plan.stdout)["tasks"][0]["placement"]
    assert (placement["cloud"], placement["region"]) == ("lambda", "us-south-1")

    out = tmp_path / "stacks"
    compiled = _skyc(home, "compile", "task.yaml", "-o", str(out), cwd=tmp_path)
    assert compiled.returncode == 0, compiled.stderr
    stack = json.loads(next(out.rglob("*.tf.json")).read_text())
    assert set(stack["resource"]["terraform_data"]) == {"node_0", "node_1"}

    applied = _skyc(home, "apply", "task.yaml", "--yes", "--down", cwd=tmp_path)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    said = applied.stdout + applied.stderr
    # us-south-1 is out of capacity: the engine's error was classified by the target,
    # the region blocked, and the same stack re-targeted to us-east-1.
    assert "InsufficientCapacity" in said
    assert "us-east-1" in said
    assert "rank 0 of 2 on head" in said and "rank 1 of 2 on worker1" in said

    status = _skyc(home, "status", "--format", "json", cwd=tmp_path)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["clusters"] == []  # --down took it away
