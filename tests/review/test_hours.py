"""``skyc plan --hours N`` shows the run's total in every format, not only in JSON."""

from __future__ import annotations

import json
from pathlib import Path

from tests.plan_diff.test_plan_diff import home, skyc

__all__ = ["home"]

TASK = str(Path(__file__).resolve().parents[2] / "examples" / "train-a100.yaml")


def test_hours_in_table_markdown_and_json(home: Path) -> None:
    r = skyc(home, "plan", TASK, "--no-diff", "--hours", "10", "--format", "json")
    assert r.returncode == 0, r.stderr
    total = json.loads(r.stdout)["cost"]["total"]
    assert total["hours"] == 10
    shown = f"${total['run_total']:,.2f}"
    r = skyc(home, "plan", TASK, "--no-diff", "--hours", "10")
    assert r.returncode == 0, r.stderr
    assert f"for 10.0 h: {shown} at the planned prices" in r.stdout
    r = skyc(home, "plan", TASK, "--no-diff", "--hours", "10", "--format", "markdown")
    assert r.returncode == 0, r.stderr
    assert f"**For 10.0 h**: {shown} at the planned prices" in r.stdout.splitlines()
    r = skyc(home, "plan", TASK, "--no-diff", "--format", "markdown")
    assert "**For" not in r.stdout
