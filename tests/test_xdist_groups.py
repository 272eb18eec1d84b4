"""The suite relies on pytest-xdist's ``--dist loadgroup`` to run a module's tests that
share one service or one set of stand-in machines on one worker, in order. pytest 9.2
moved node ids where xdist 3.8 cannot tag them with their group, and every grouped test
was then spread over the workers without a word: this runs a small grouped module
under xdist and checks one worker ran the whole group."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

GROUPED = '''\
import os
import pytest

pytestmark = pytest.mark.xdist_group("one")


@pytest.mark.parametrize("n", range(6))
def test_grouped(n):
    with open(os.environ["WORKERS_FILE"], "a") as out:
        out.write(os.environ["PYTEST_XDIST_WORKER"] + "\\n")


@pytest.mark.parametrize("n", range(6))
def test_free(n):
    pass
'''


def test_a_group_runs_on_one_worker(tmp_path: Path) -> None:
    (tmp_path / "test_grouped.py").write_text(GROUPED)
    workers = tmp_path / "workers.txt"
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "loadgroup",
         "-p", "no:cacheprovider", "-p", "no:randomly", str(tmp_path / "test_grouped.py")],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={**os.environ, "WORKERS_FILE": str(workers)})
    assert run.returncode == 0, run.stdout + run.stderr
    ran_on = workers.read_text().split()
    assert len(ran_on) == 6 and len(set(ran_on)) == 1, ran_on
