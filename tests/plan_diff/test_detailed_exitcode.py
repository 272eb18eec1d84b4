"""``skyc plan --detailed-exitcode`` says what skyc knows, as ``terraform plan``'s does:
0 only when nothing changes, 2 when something does (a new cluster included, with or
without the engine's diff), 1 when an existing cluster's diff could not be computed.
The markdown headline never claims counts it does not have. Real subprocesses, real
terraform on ``local``; AWS without credentials (no diff can run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.plan_diff.test_plan_diff import home, local_task, skyc
from tests.support.terraform import requires_terraform

__all__ = ["home"]

ROOT = Path(__file__).resolve().parents[2]


def test_a_new_cluster_with_no_diff_is_a_change(tmp_path: Path, home: Path) -> None:
    task = local_task(tmp_path / "t.yaml", 2)
    r = skyc(home, "plan", task, "--no-diff", "--detailed-exitcode")
    assert r.returncode == 2, r.stderr


def test_no_credentials_is_not_no_changes(home: Path) -> None:
    """No AWS credentials: no diff for the stack. It does not exist yet, so applying it
    creates it (2); the headline says the changes are unknown instead of "0 to add"."""
    r = skyc(home, "plan", str(ROOT / "examples" / "serve-l4.yaml"), "--infra", "aws",
             "--detailed-exitcode", "--format", "markdown")
    assert r.returncode == 2, r.stderr
    headline = r.stdout.splitlines()[1]
    assert "0 to add" not in headline and "changes unknown" in headline, headline


@requires_terraform
@pytest.mark.timeout(300)
def test_an_existing_cluster(tmp_path: Path, home: Path) -> None:
    task = local_task(tmp_path / "t.yaml", 2)
    r = skyc(home, "apply", task, "--yes")
    assert r.returncode == 0, r.stderr
    r = skyc(home, "plan", task, "--detailed-exitcode")
    assert r.returncode == 0, r.stderr  # the engine's diff: nothing changes
    r = skyc(home, "plan", task, "--no-diff", "--detailed-exitcode")
    assert r.returncode == 1, r.stderr  # not known without the diff
    assert "tiny" in r.stderr and "not known" in r.stderr
    r = skyc(home, "plan", task, "--no-diff", "--detailed-exitcode", "--num-nodes", "3")
    assert r.returncode == 2, r.stderr  # the placement itself changes
    r = skyc(home, "plan", task, "--detailed-exitcode", "--num-nodes", "3",
             "--format", "markdown")
    assert r.returncode == 2, r.stderr
    assert r.stdout.splitlines()[1].startswith("**skyc plan**: 1 to add, 0 to change"), r.stdout
    assert skyc(home, "down", "tiny", "--yes").returncode == 0
