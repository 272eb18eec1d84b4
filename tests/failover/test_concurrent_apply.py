"""Two `skyc apply` on one cluster at once (real subprocesses, local infra, real
terraform): exactly one proceeds; a second waits for the cluster lock with a
message naming the holder, and one with `--lock-timeout 1` gives up naming it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from skyc.state.locks import read_holder
from tests.support.terraform import requires_terraform

pytestmark = [pytest.mark.slow, requires_terraform]


def _skyc(home: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "SKYC_HOME": str(home), "COLUMNS": "200", "NO_COLOR": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "skyc", *args], env=env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL,
    )


def _stamp(output: str, word: str) -> float:
    """The time the job printed after ``word`` (lines look like ``(head, rank=0) word T``)."""
    [line] = [ln for ln in output.splitlines() if f" {word} " in ln]
    return float(line.split()[-1])


def test_second_apply_waits_third_times_out(tmp_path: Path) -> None:
    home = tmp_path / "home"
    task = tmp_path / "busy.yaml"
    task.write_text(
        "name: busy\nresources:\n  infra: local\n"
        "run: |\n  echo start-$RUN_ID $(date +%s.%N)\n  sleep 6\n"
        "  echo end-$RUN_ID $(date +%s.%N)\n"
    )
    lock = home / "locks" / "busy.lock"
    first = _skyc(home, "apply", str(task), "--yes", "--env", "RUN_ID=a")
    deadline = time.monotonic() + 60
    while (read_holder(lock) or {}).get("pid") != first.pid:
        assert first.poll() is None, first.communicate()
        assert time.monotonic() < deadline, "the first apply never took the lock"
        time.sleep(0.05)

    second = _skyc(home, "apply", str(task), "--yes", "--env", "RUN_ID=b")
    third = _skyc(home, "apply", str(task), "--yes", "--env", "RUN_ID=c",
                  "--lock-timeout", "1")
    out3, err3 = third.communicate(timeout=60)
    out1, err1 = first.communicate(timeout=120)
    out2, err2 = second.communicate(timeout=120)

    assert first.returncode == 0, err1
    assert "start-a" in out1 and "end-a" in out1

    # The third gave up after a second, naming the holder, and ran nothing.
    assert third.returncode == 1, err3
    err3_flat = " ".join(err3.split())
    assert f"cluster 'busy' is busy: pid {first.pid}" in err3_flat, err3
    assert "gave up after 1s" in err3_flat
    assert "Traceback" not in err3 and "start-c" not in out3

    # The second waited (saying for whom) and ran only after the first finished.
    assert second.returncode == 0, err2
    assert f"cluster 'busy' is locked by pid {first.pid}" in " ".join(err2.split()), err2
    assert _stamp(out2, "start-b") >= _stamp(out1, "end-a")
    assert read_holder(lock) is None  # released (emptied) when done
