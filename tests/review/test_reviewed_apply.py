"""``apply`` applies the diff it confirmed, and ``plan`` leaves $SKYC_HOME as it was.

Real terraform on the ``local`` target (terraform's built-in ``terraform_data``, no
provider, offline); each engine run leaves one log file in the workspace's
``logs/``, named after its operation, which is how the plans are counted.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from tests.plan_diff.test_plan_diff import local_task, skyc
from tests.support.terraform import requires_terraform

pytestmark = pytest.mark.timeout(300)


class Quiet:
    """A LaunchReporter that keeps what it is told."""

    def __init__(self) -> None:
        self.stages: list[tuple[str, str]] = []

    def stage(self, name: str, detail: str = "") -> None:
        self.stages.append((name, detail))

    def plan(self, plan: Any) -> None: ...
    def attempt(self, attempt: Any, next_placement: Any) -> None: ...
    def engine_event(self, event: Any) -> None: ...
    def log_line(self, node: str, line: str) -> None: ...


def tree_digest(root: Path) -> str:
    """Every path under ``root`` with its bytes and mode; not ``cache/`` (derived data,
    such as the catalog's decoded copy, which any command may write)."""
    h = hashlib.sha256()
    if not root.exists():
        return "absent"
    for path in sorted(root.rglob("*")):
        if path.relative_to(root).parts[0] == "cache":
            continue
        h.update(str(path.relative_to(root)).encode() + b"\0")
        h.update(oct(path.stat().st_mode).encode())
        if path.is_file():
            h.update(path.read_bytes())
    return h.hexdigest()


def engine_runs(workspace: Path, op: str) -> int:
    return len(list((workspace / "logs").glob(f"*-{op}.log")))


@requires_terraform
def test_apply_applies_the_diff_it_confirmed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from skyc.apply.launch import LaunchOptions, launch
    from skyc.task import load_tasks

    monkeypatch.setenv("SKYC_HOME", str(tmp_path / "skyc-home"))
    task = load_tasks(Path(local_task(tmp_path / "t.yaml", 2)), env={}).tasks
    shown: list[str] = []

    def confirm(summary: str) -> bool:
        shown.append(summary)
        return True

    result = launch(task, LaunchOptions(confirm=confirm), Quiet())
    assert result.exit_code == 0
    assert "2 to create" in shown[0] and "terraform_data.node_1" in shown[0]
    workspace = tmp_path / "skyc-home" / "clusters" / "tiny"
    # One plan (the one shown), then its saved plan applied: no second plan.
    assert (engine_runs(workspace, "plan"), engine_runs(workspace, "apply")) == (1, 1)


@requires_terraform
def test_plan_leaves_skyc_home_as_it_found_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".skyc").mkdir(parents=True)
    (home / ".skyc" / "config.yaml").write_text("{}\n")
    before = tree_digest(home / ".skyc")
    r = skyc(home, "plan", local_task(tmp_path / "t.yaml", 2), "--format", "json")
    assert r.returncode == 0, r.stderr
    assert '"create"' in r.stdout  # the engine diff did run
    assert tree_digest(home / ".skyc") == before
