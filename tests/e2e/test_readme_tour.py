"""The README's short tour, run as written: every command of its first shell block, in
order, through the real CLI, in a copy of ``examples/`` and a home with no cloud
credentials (the plan-only clouds) where ``local`` runs the jobs. A command that the
README shows and skyc no longer does, or does differently, fails here."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import _CREDENTIAL_VARS, REPO
from tests.support.terraform import requires_terraform


def tour_lines(readme: Path) -> list[str]:
    """The command lines of the first ```bash block under "## A short tour"."""
    text = readme.read_text()
    section = text.split("\n## A short tour\n", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block, "README: the tour has no ```bash block"
    return [line for line in block.group(1).splitlines() if line.strip()]


def test_the_tour_is_found_and_names_the_daily_commands() -> None:
    lines = tour_lines(REPO / "README.md")
    firsts = {line.split()[1] for line in lines}
    assert {"validate", "plan", "compile", "launch", "exec", "queue", "down"} <= firsts


@requires_terraform
@pytest.mark.timeout(600)
def test_every_tour_command_runs_as_written(tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(REPO / "examples", project / "examples")
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if k not in _CREDENTIAL_VARS}
    env.update({
        "SKYC_HOME": str(home), "PYTHONPATH": str(REPO), "HOME": str(tmp_path / "user"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
        "AWS_CONFIG_FILE": str(tmp_path / "none"), "NO_COLOR": "1", "COLUMNS": "160",
    })
    (tmp_path / "user").mkdir()
    # `skyc` as the user types it; bash gives the lines their globs, `;` and `>`.
    prelude = f'skyc() {{ {sys.executable} -m skyc "$@"; }}\nset -e\n'
    try:
        for line in tour_lines(REPO / "README.md"):
            out = subprocess.run(["bash", "-c", prelude + line], cwd=project, env=env,
                                 stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                 timeout=300)
            assert out.returncode == 0, f"{line}\n{out.stdout}\n--- stderr\n{out.stderr}"
            assert "Traceback" not in out.stdout + out.stderr, line
    finally:
        subprocess.run([sys.executable, "-m", "skyc", "down", "-a", "--yes"], cwd=project,
                       env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=300)
    assert (project / "task.schema.json").stat().st_size > 0
    assert (project / "out" / "plan.json").is_file()
