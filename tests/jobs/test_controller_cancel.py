"""A cancel that arrives while the job's cluster is being provisioned: the engine's
apply in flight is stopped (as Ctrl-C stops it), what it created is destroyed, and the
job is CANCELLED with nothing left running. Real skyc processes, the real terraform
binary on a local stack.

What is not real: to hold provisioning in flight, ``mkdir`` on PATH is a test shim
that blocks when the local stack's provisioner runs it (that provisioner sets
SKYC_NODE_DIR) until the provisioner is stopped; every other ``mkdir`` is the real
one."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from tests.e2e.conftest import Skyc, wait_until
from tests.jobs.conftest import job, wait_for

# Blocks for as long as the process that ran it (the provisioner's shell) lives: once
# terraform stops the provisioner, the shim ends too.
SHIM = """#!/bin/sh
if [ -n "$SKYC_NODE_DIR" ]; then
  echo "$$" >> "{marker}"
  while kill -0 "$PPID" 2>/dev/null; do sleep 0.2; done
  exit 1
fi
exec {mkdir} "$@"
"""


def _blocked_pids(marker: Path) -> list[int]:
    """The shim processes still alive (each wrote its pid)."""
    if not marker.exists():
        return []
    alive = []
    for pid in {int(p) for p in marker.read_text().split()}:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        if stat.rsplit(")", 1)[1].split()[0] != "Z":
            alive.append(pid)
    return alive


def test_cancel_while_provisioning_stops_the_apply_and_leaves_nothing(
        jobs: Skyc, tmp_path: Path) -> None:
    real_mkdir = shutil.which("mkdir")
    assert real_mkdir
    shims = tmp_path / "shims"
    shims.mkdir()
    marker = tmp_path / "provisioner-pids"
    (shims / "mkdir").write_text(SHIM.format(marker=marker, mkdir=real_mkdir))
    (shims / "mkdir").chmod(0o755)
    jobs.env["PATH"] = f"{shims}:{os.environ['PATH']}"
    jobs.write("train.yaml", "name: train\nnum_nodes: 2\nresources:\n  infra: local\n"
                             "run: echo never-ran\n")
    jobs.ok("jobs", "launch", "train.yaml", "-y", "-d")
    # terraform apply is running the local stack's provisioners: the job is starting.
    assert wait_until(lambda: bool(_blocked_pids(marker)), timeout=60), \
        jobs("jobs", "logs", "1", "--controller").stdout
    assert job(jobs, 1)["status"] == "STARTING"
    t0 = time.monotonic()

    out = jobs.ok("jobs", "cancel", "1", timeout=120)

    took = time.monotonic() - t0
    assert "managed job 1: CANCELLED" in out.stdout, str(out)
    assert took < 45, took
    done = job(jobs, 1)
    statuses = [e["status"] for e in done["trail"]]
    assert statuses[-2:] == ["CANCELLING", "CANCELLED"] and "RUNNING" not in statuses
    assert done["attempts"] == []        # never came up: no attempt was opened
    log = jobs.ok("jobs", "logs", "1", "--controller").stdout
    assert "provisioning interrupted" in log and "tearing down cluster skyc-job-1" in log
    # Nothing is left: no stack, no node directory, no provisioner process.
    assert jobs.clusters() == []
    assert not (jobs.workspace("skyc-job-1") / "cluster.json").exists()
    assert not (jobs.workspace("skyc-job-1") / "nodes").exists()
    assert wait_until(lambda: _blocked_pids(marker) == [], timeout=30), _blocked_pids(marker)
    assert "never-ran" not in jobs.ok("jobs", "logs", "1").stdout
    # The controller moves on: a later job on the same controller runs normally.
    (shims / "mkdir").unlink()
    jobs.write("ok.yaml", "name: ok\nresources:\n  infra: local\nrun: echo fine\n")
    jobs.ok("jobs", "launch", "ok.yaml", "-y", "-d")
    assert wait_for(jobs, 2, lambda j: j["status"] in ("SUCCEEDED", "FAILED"),
                    timeout=120)["status"] == "SUCCEEDED"
