"""`skyc launch -c NAME 'cmd'` runs a command as a task, as `sky launch -c NAME 'cmd'`
does, with the resource overrides (the real CLI on local)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.plan_diff.test_plan_diff import home, skyc
from tests.support.terraform import requires_terraform

__all__ = ["home"]


@requires_terraform
@pytest.mark.timeout(300)
def test_launch_an_inline_command_on_two_nodes(home: Path) -> None:
    out = skyc(home, "launch", "-c", "inl", "echo rank=$SKYPILOT_NODE_RANK", "--infra",
               "local", "--num-nodes", "2", "--yes", "--down")
    assert out.returncode == 0, out.stderr
    assert "rank=0" in out.stdout and "rank=1" in out.stdout, out.stdout
    assert "Job ID: 1 (on inl)" in out.stderr


def test_an_empty_command_is_refused(home: Path) -> None:
    out = skyc(home, "launch", "-c", "inl", "  ", "--yes")
    assert out.returncode == 1 and "the command is empty" in out.stderr, out.stderr
