"""Lifecycle commands do what they say (issue 24, item 6).

- ``skyc down`` / ``skyc stop`` of a managed job's cluster is refused, naming the job
  and ``skyc jobs cancel N``; the job's controller still tears its cluster down.
- A failed apply keeps an UP cluster's status (the failure is an event), and a first
  apply that created nothing leaves no record and no workspace behind.
- ``file_mounts`` targets under ``~`` may not climb out of it through ``..``.

Real ``python -m skyc`` processes on the ``local`` infra with the real terraform binary.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from skyc.errors import SkycError, TaskSpecError
from skyc.task import load_tasks
from tests.e2e.conftest import (
    Skyc,
    skyc,  # noqa: F401 - the fixture
)

IDLE = "name: box\nresources:\n  infra: local\n"


def _rows(runner: Skyc) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(runner.ok("status", "--format", "json", "-v").stdout)
    return doc


def _row(runner: Skyc, name: str) -> dict[str, Any]:
    rows = _rows(runner)["clusters"]
    found = [r for r in rows if r["name"] == name]
    assert len(found) == 1, rows
    row: dict[str, Any] = found[0]
    return row


def _path_without_terraform() -> str:
    """This machine's PATH less every directory holding a terraform or tofu binary."""
    keep = [d for d in os.environ.get("PATH", "").split(os.pathsep)
            if d and not any((Path(d) / b).exists() for b in ("terraform", "tofu"))]
    return os.pathsep.join(keep)


def _no_terraform(runner: Skyc) -> None:
    runner.env["PATH"] = _path_without_terraform()
    runner.env.pop("SKYC_TERRAFORM", None)


# -- a managed job's cluster ----------------------------------------------------------


def _record_managed_job(home: Path, cluster: str, status: str) -> int:
    """A managed job in the state database whose cluster is ``cluster`` (its
    controller is not needed to decide whether the cluster is the job's)."""
    from skyc.model.managed_jobs import JobSpecDoc
    from skyc.state.database import StateDB
    from skyc.state.managed_jobs import ManagedJobStore

    store = ManagedJobStore(StateDB(home / "state.db"))
    try:
        job_id = store.add("train", str(home / "train.yaml"), JobSpecDoc(), 1)
        store.set_status(job_id, status, "test", cluster=cluster)  # type: ignore[arg-type]
        return job_id
    finally:
        store.close()


@pytest.mark.timeout(300)
def test_down_and_stop_refuse_a_managed_jobs_cluster_and_its_controller_tears_it_down(
    skyc: Skyc, monkeypatch: pytest.MonkeyPatch,  # noqa: F811
) -> None:
    skyc.write("box.yaml", IDLE)
    skyc.ok("apply", "box.yaml", "-c", "skyc-job-1", "--yes")
    job_id = _record_managed_job(skyc.home, "skyc-job-1", "RUNNING")
    assert job_id == 1

    for args in (("down", "skyc-job-1", "--yes"), ("destroy", "skyc-job-1", "--yes"),
                 ("stop", "skyc-job-1")):
        out = skyc(*args)
        flat = " ".join(out.stderr.split())
        assert out.returncode == 1, str(out)
        assert "cluster skyc-job-1 belongs to managed job 1 (train), which is RUNNING" in flat
        assert "would cancel the job with no recovery" in flat, str(out)
        assert "skyc jobs cancel 1" in flat, str(out)
        assert "Traceback" not in out.output
    assert _row(skyc, "skyc-job-1")["status"] == "UP"
    assert (skyc.workspace("skyc-job-1") / "cluster.json").exists()

    # The job's controller acts for the job: its teardown is not refused.
    from skyc.apply.launch import check_not_managed, teardown_cluster

    monkeypatch.setenv("SKYC_HOME", str(skyc.home))
    with pytest.raises(SkycError, match="belongs to managed job 1") as info:
        check_not_managed("skyc-job-1")
    assert info.value.hint is not None and "skyc jobs cancel 1" in info.value.hint
    check_not_managed("skyc-job-1", for_job=1)
    teardown_cluster("skyc-job-1", _Quiet(), for_job=1)
    assert skyc.clusters() == []
    assert not (skyc.workspace("skyc-job-1") / "cluster.json").exists()


def test_a_finished_jobs_leftover_cluster_and_other_clusters_can_go(
    skyc: Skyc, monkeypatch: pytest.MonkeyPatch,  # noqa: F811
) -> None:
    skyc.write("box.yaml", IDLE)
    skyc.ok("apply", "box.yaml", "-c", "skyc-job-1", "--yes")
    _record_managed_job(skyc.home, "skyc-job-1", "SUCCEEDED")
    _record_managed_job(skyc.home, "skyc-job-2", "RUNNING")

    from skyc.apply.launch import managed_job_of, skip_managed

    monkeypatch.setenv("SKYC_HOME", str(skyc.home))
    assert managed_job_of("skyc-job-1") is None       # the job ended: the cluster is free
    assert managed_job_of("skyc-job-2") is not None
    assert managed_job_of("skyc-job-2-0") is None     # not a cluster of a one-task job
    assert managed_job_of("box") is None
    kept, notes = skip_managed(["box", "skyc-job-1", "skyc-job-2"])
    assert kept == ["box", "skyc-job-1"]
    assert notes == ["skyc-job-2: skipped, it runs managed job 2 (RUNNING); cancel it "
                     "with `skyc jobs cancel 2`"]

    skyc.ok("down", "skyc-job-1", "--yes")
    assert skyc.clusters() == []


def test_down_all_skips_a_managed_jobs_cluster_with_a_note(skyc: Skyc) -> None:  # noqa: F811
    skyc.write("box.yaml", IDLE)
    skyc.ok("apply", "box.yaml", "-c", "skyc-job-1", "--yes")
    skyc.ok("apply", "box.yaml", "-c", "zzz", "--yes")
    _record_managed_job(skyc.home, "skyc-job-1", "RUNNING")

    out = skyc("down", "-a", "--yes")

    assert out.returncode == 0, str(out)
    assert "skyc-job-1: skipped, it runs managed job 1" in " ".join(out.output.split())
    assert skyc.clusters() == ["skyc-job-1"]


class _Quiet:
    def stage(self, name: str, detail: str = "") -> None:
        return None

    def plan(self, plan: Any) -> None:
        return None

    def attempt(self, attempt: Any, next_placement: Any) -> None:
        return None

    def engine_event(self, event: Any) -> None:
        return None

    def log_line(self, node: str, line: str) -> None:
        return None


# -- a failed apply ---------------------------------------------------------------------


@pytest.mark.timeout(300)
def test_a_failed_apply_keeps_an_up_cluster_up_and_records_the_failure(
    skyc: Skyc,  # noqa: F811
) -> None:
    skyc.write("box.yaml", IDLE + "num_nodes: 2\n")
    skyc.ok("apply", "box.yaml", "--yes")
    before = _row(skyc, "box")
    assert before["status"] == "UP" and len(before["nodes"]) == 2
    _no_terraform(skyc)

    out = skyc("apply", "box.yaml", "--yes")

    assert out.returncode == 1, str(out)
    assert "neither terraform nor tofu was found on PATH" in out.stderr, str(out)
    after = _row(skyc, "box")
    assert after["status"] == "UP", after
    assert after["nodes"] == before["nodes"] and after["launched_at"] == before["launched_at"]
    failed = [e for e in after["events"] if e["kind"] == "apply-failed"]
    assert len(failed) == 1, after["events"]
    assert failed[0]["message"].startswith("apply failed; the cluster keeps its status UP: "
                                           "neither terraform nor tofu")
    # The cluster is as healthy as before: a refresh (which needs the engine) agrees.
    skyc.env["PATH"] = os.environ["PATH"]
    assert _row(skyc, "box")["status"] == "UP"
    refreshed = json.loads(skyc.ok("status", "box", "--refresh", "--format", "json").stdout)
    assert refreshed["clusters"][0]["status"] == "UP"


def test_a_first_apply_without_its_engine_leaves_no_record(
    skyc: Skyc,  # noqa: F811
) -> None:
    skyc.write("box.yaml", IDLE)
    _no_terraform(skyc)

    t0 = time.monotonic()
    out = skyc("apply", "box.yaml", "--yes")

    assert out.returncode == 1, str(out)
    assert "neither terraform nor tofu was found on PATH" in out.stderr, str(out)
    assert "destroying what it created failed too" not in out.stderr, str(out)
    assert "cleanup" not in out.stderr, str(out)
    assert time.monotonic() - t0 < 30
    doc = _rows(skyc)
    assert doc["clusters"] == [] and doc["orphans"] == [], doc
    ws = skyc.workspace("box")
    assert not ws.exists() or not list(ws.iterdir()), list(ws.iterdir())


MKDIR_FAILS = """#!/bin/sh
if [ -n "$SKYC_NODE_DIR" ]; then echo "node directory refused (test)" >&2; exit 1; fi
exec {mkdir} "$@"
"""


@pytest.mark.timeout(300)
def test_a_first_apply_whose_attempt_was_destroyed_leaves_only_engine_logs(
    skyc: Skyc, tmp_path: Path,  # noqa: F811
) -> None:
    real_mkdir = shutil.which("mkdir")
    assert real_mkdir
    shims = tmp_path / "shims"
    shims.mkdir()
    (shims / "mkdir").write_text(MKDIR_FAILS.format(mkdir=real_mkdir))
    (shims / "mkdir").chmod(0o755)
    skyc.env["PATH"] = f"{shims}{os.pathsep}{os.environ['PATH']}"
    skyc.write("box.yaml", IDLE)

    out = skyc("apply", "box.yaml", "--yes")

    assert out.returncode == 1, str(out)
    assert "node directory refused (test)" in out.stderr, str(out)
    doc = _rows(skyc)
    assert doc["clusters"] == [] and doc["orphans"] == [], doc
    # What the hint points at stays: the engine's logs, nothing else.
    assert {p.name for p in skyc.workspace("box").iterdir()} == {"logs"}
    assert "full engine output: " in out.stderr
    skyc.env["PATH"] = os.environ["PATH"]
    skyc.ok("apply", "box.yaml", "--yes")
    assert _row(skyc, "box")["status"] == "UP"


# -- file_mounts targets ------------------------------------------------------------------


@pytest.mark.parametrize("target", ["~/../../x", "~/..", "~/../", "~/a/../../b", "~//../x",
                                    "../../x", "../x"])
def test_a_file_mount_target_may_not_climb_out_of_home_or_the_workdir(
    tmp_path: Path, target: str
) -> None:
    path = tmp_path / "task.yaml"
    path.write_text(f"file_mounts:\n  '{target}': ./data\nrun: echo hi\n")

    with pytest.raises(TaskSpecError) as info:
        load_tasks(path)

    [problem] = info.value.problems
    assert problem.path == f"file_mounts[{target!r}]"
    assert f"mount target {target!r} leaves" in problem.message
    assert "give an absolute path" in problem.message


@pytest.mark.parametrize(("target", "kept"), [
    ("~/data", "~/data"), ("~", "~"), ("~/a/../b", "~/a/../b"), ("/mnt/../data", "/mnt/../data"),
    ("data", "~/sky_workdir/data"), ("./a/../b", "~/sky_workdir/b"),
])
def test_file_mount_targets_that_stay_inside_are_accepted(
    tmp_path: Path, target: str, kept: str
) -> None:
    path = tmp_path / "task.yaml"
    path.write_text(f"file_mounts:\n  '{target}': ./data\nrun: echo hi\n")

    [task] = load_tasks(path).tasks

    assert list(task.file_mounts) == [kept]


# -- waiting for a cluster's lock -----------------------------------------------------------

HOLD_LOCK = """
import sys, time
sys.argv = [{main!r}, "apply", "box.yaml", "--yes"]
from skyc.state.locks import cluster_lock
with cluster_lock("box", timeout=5):
    print("held", flush=True)
    time.sleep(60)
"""


@pytest.fixture
def held_by_apply(skyc: Skyc) -> Iterator[subprocess.Popen[str]]:  # noqa: F811
    """A process that holds cluster box's lock as an attached ``skyc apply`` does."""
    main = str(Path(__file__).resolve().parents[1] / "skyc" / "__main__.py")
    proc = subprocess.Popen([sys.executable, "-c", HOLD_LOCK.format(main=main)],
                            env=skyc.env, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        yield proc
    finally:
        proc.kill()
        proc.wait()


def test_stop_says_who_holds_the_lock_before_it_waits(
    skyc: Skyc, held_by_apply: subprocess.Popen[str],  # noqa: F811
) -> None:
    out = skyc("stop", "box", "--lock-timeout", "1")

    pid = held_by_apply.pid
    assert out.returncode == 1, str(out)
    lines = out.stderr.splitlines()
    assert lines[0].startswith(f"waiting up to 1s for the lock on cluster box, held by "
                               f"`skyc apply box.yaml` (pid {pid}) since "), str(out)
    assert lines[0].endswith(f"; Ctrl-C to stop waiting, or interrupt that apply with: "
                             f"kill -INT {pid}"), str(out)
    assert "is busy" in out.stderr and "gave up after 1s" in out.stderr


def test_down_says_who_holds_the_lock_before_it_waits(
    skyc: Skyc, held_by_apply: subprocess.Popen[str],  # noqa: F811
) -> None:
    down = skyc.popen("down", "box", "--yes")
    time.sleep(3)
    held_by_apply.kill()  # the apply ends: down goes on (and finds no cluster box)
    _, err = down.communicate(timeout=120)

    pid = held_by_apply.pid
    assert err.splitlines()[0].startswith(
        f"waiting up to 60s for the lock on cluster box, held by `skyc apply box.yaml` "
        f"(pid {pid}) since "), err
    assert f"interrupt that apply with: kill -INT {pid}" in err


def test_the_lock_waiter_names_the_holder_when_the_lock_is_taken(
    skyc: Skyc, held_by_apply: subprocess.Popen[str],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    from skyc.cli.cmd_lifecycle import lock_notice, lock_waiter
    from skyc.errors import LockTimeout
    from skyc.state.locks import cluster_lock

    monkeypatch.setenv("SKYC_HOME", str(skyc.home))
    with pytest.raises(LockTimeout), cluster_lock("box", timeout=0.3,
                                                  on_wait=lock_waiter("box", 0.3)):
        pass

    err = capsys.readouterr().err
    assert f"held by `skyc apply box.yaml` (pid {held_by_apply.pid})" in err
    assert f"kill -INT {held_by_apply.pid}" in err
    # A holder that is not an apply is not offered to be interrupted.
    other = lock_notice("box", 60, {"pid": 7, "command": "skyc destroy box", "since": 0.0})
    assert "held by `skyc destroy box` (pid 7)" in other and "kill" not in other
    assert lock_notice("box", 60, None).endswith("held by another skyc process; Ctrl-C to "
                                                 "stop waiting")
    # A team's state names who holds it and where; a holder on another machine is not
    # offered to be interrupted with a local kill.
    remote = lock_notice("box", 60, {"pid": 9, "command": "skyc apply box.yaml", "since": 0.0,
                                     "who": "alice", "host": "elsewhere.example"})
    assert "held by alice@elsewhere.example `skyc apply box.yaml` (pid 9)" in remote
    assert "kill" not in remote
