"""`skyc autostop` says what it set, not what has happened (the real CLI on local)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.plan_diff.test_plan_diff import home, local_task, skyc
from tests.support.terraform import requires_terraform

__all__ = ["home"]


@requires_terraform
@pytest.mark.timeout(300)
def test_autostop_says_what_was_set(tmp_path: Path, home: Path) -> None:
    task = local_task(tmp_path / "t.yaml", 1, name="idle")
    assert skyc(home, "apply", task, "--yes").returncode == 0
    try:
        out = skyc(home, "autostop", "idle", "-i", "60", "--down")
        assert out.returncode == 0, out.stderr
        assert ("cluster idle: autostop set: it will be torn down once idle for 60 "
                "minute(s); cancel with: skyc autostop idle --cancel") in out.stdout, out.stdout
        assert "torn down after" not in out.stdout
        assert skyc(home, "autostop", "idle", "--cancel").returncode == 0
    finally:
        skyc(home, "down", "idle", "--yes")
