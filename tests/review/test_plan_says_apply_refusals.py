"""What apply would refuse is said at plan, in apply's words: in the table, in JSON and
in the PR comment (the real CLI; examples/serve-l4.yaml asks for autostop with down,
which apply refuses on AWS)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.plan_diff.test_plan_diff import home, skyc

__all__ = ["home"]

TASK = str(Path(__file__).resolve().parents[2] / "examples" / "serve-l4.yaml")
WORDS = "autostop --down is not available on this target yet"


def test_plan_says_what_apply_refuses(home: Path) -> None:
    table = skyc(home, "plan", TASK, "--infra", "aws", "--no-diff")
    assert table.returncode == 0, table.stderr
    assert "apply would refuse serve-l4 on aws/" in table.stdout and WORDS in table.stdout
    doc = json.loads(skyc(home, "plan", TASK, "--infra", "aws", "--no-diff", "--format",
                          "json").stdout)
    [refusal] = doc["notes"]["apply_refusals"]
    assert WORDS in refusal
    comment = skyc(home, "plan", TASK, "--infra", "aws", "--no-diff", "--format", "markdown")
    assert "**Apply would refuse**" in comment.stdout and WORDS in comment.stdout
    apply = skyc(home, "apply", TASK, "--infra", "aws", "--yes")
    assert apply.returncode != 0 and WORDS in apply.stderr  # the same words


def test_no_refusal_no_note(home: Path) -> None:
    doc = json.loads(skyc(home, "plan", TASK, "--infra", "local", "--no-diff", "--format",
                          "json").stdout)
    assert "apply_refusals" not in doc.get("notes", {})
