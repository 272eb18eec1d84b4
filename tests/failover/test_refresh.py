"""`skyc status --refresh` on local infra (real terraform, real node directories):
UP while the cluster is intact, INIT with a note once a node's directory is
gone, untouched while another skyc holds the cluster's lock."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from skyc.state.locks import cluster_lock
from tests.support.terraform import requires_terraform

pytestmark = [pytest.mark.slow, requires_terraform]


def _skyc(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SKYC_HOME": str(home), "COLUMNS": "200", "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "skyc", *args], env=env, text=True,
                          capture_output=True, stdin=subprocess.DEVNULL, timeout=300)


def _status(home: Path, *args: str) -> dict[str, Any]:
    out = _skyc(home, "status", "keep", "--format", "json", "-v", *args)
    assert out.returncode == 0, out.stderr
    [row] = json.loads(out.stdout)["clusters"]
    assert isinstance(row, dict)
    return row


def test_refresh_marks_a_cluster_with_a_missing_node_init(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    task = tmp_path / "keep.yaml"
    task.write_text("name: keep\nnum_nodes: 2\nresources:\n  infra: local\nrun: echo hi\n")
    out = _skyc(home, "apply", str(task), "--yes")
    assert out.returncode == 0, out.stderr
    row = _status(home, "--refresh")
    assert row["status"] == "UP"
    assert row["last_job"]["status"] == "SUCCEEDED"
    assert not [e for e in row["events"] if e["kind"] == "refresh"]

    worker = Path(row["nodes"][1]["node_dir"])
    shutil.rmtree(worker)
    # While another skyc holds the cluster, refresh leaves it alone.
    monkeypatch.setenv("SKYC_HOME", str(home))
    with cluster_lock("keep", timeout=5):
        assert _status(home, "--refresh")["status"] == "UP"
    row = _status(home, "--refresh")
    assert row["status"] == "INIT"
    assert "node directories missing: worker1" in row["events"][-1]["message"]
    # Without --refresh, status only reads the state database.
    assert _status(home)["status"] == "INIT"

    out = _skyc(home, "destroy", "keep", "--yes")
    assert out.returncode == 0, out.stderr
