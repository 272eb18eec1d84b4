"""``skyc down`` of a running managed job's cluster is refused (it would cancel the job
with no recovery); ``skyc jobs cancel`` still ends the job and its controller tears the
cluster down. Real skyc processes and controller, the real terraform binary, ``local``."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.conftest import Skyc, wait_until
from tests.jobs.conftest import job, node_pids, wait_for


def _sleeping(node: Path) -> set[int]:
    """The node's processes running the job's program (``sleep 600``)."""
    found = set()
    for pid in node_pids(node):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[:2] == [b"sleep", b"600"]:
            found.add(pid)
    return found


def test_down_refuses_a_running_jobs_cluster_and_cancel_still_tears_it_down(
        jobs: Skyc) -> None:
    jobs.write("forever.yaml", "name: forever\nresources:\n  infra: local\nrun: sleep 600\n")
    jobs.ok("jobs", "launch", "forever.yaml", "-y", "-d")
    wait_for(jobs, 1, lambda j: j["status"] == "RUNNING")
    head = jobs.workspace("skyc-job-1") / "nodes" / "head"
    assert wait_until(lambda: _sleeping(head), timeout=30)
    sleeping = _sleeping(head)

    down = jobs("down", "skyc-job-1", "--yes")

    flat = " ".join(down.stderr.split())
    assert down.returncode == 1, str(down)
    assert "cluster skyc-job-1 belongs to managed job 1 (forever), which is RUNNING" in flat
    assert "`skyc jobs cancel 1`" in flat and "Traceback" not in down.output
    assert job(jobs, 1)["status"] == "RUNNING"
    assert _sleeping(head) == sleeping                # the run was left alone
    assert "skyc-job-1" in jobs.clusters()

    out = jobs.ok("jobs", "cancel", "1", timeout=120)

    assert "managed job 1: CANCELLED" in out.stdout, str(out)
    assert jobs.clusters() == []
    assert not (jobs.workspace("skyc-job-1") / "cluster.json").exists()
    assert wait_until(lambda: node_pids(head) == [], timeout=10)
