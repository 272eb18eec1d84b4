"""The managed-jobs controller's threads against a busy state database: the lease's
heartbeat thread outlives a write that could not get the database's lock, and says
the lease is lost only once it could not renew it for as long as the lease lasts.

Real sqlite: another connection holds the database's write lock (``BEGIN
IMMEDIATE``), as another skyc process writing would; the busy timeout is shortened
so that a renewal gives up within the test.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import skyc.state.dbfile
from skyc.jobs.lease import Lease
from skyc.model.managed_jobs import JobSpecDoc
from skyc.state.managed_jobs import ManagedJobStore


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ManagedJobStore]:
    monkeypatch.setenv("SKYC_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(skyc.state.dbfile, "BUSY_TIMEOUT_S", 0.1)
    opened = ManagedJobStore()
    try:
        yield opened
    finally:
        opened.close()


@contextlib.contextmanager
def _write_locked(db: Path, seconds: float) -> Iterator[threading.Thread]:
    """Another connection holds the database's write lock for ``seconds``."""
    ready = threading.Event()

    def hold() -> None:
        conn = sqlite3.connect(db, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        ready.set()
        time.sleep(seconds)
        conn.execute("ROLLBACK")
        conn.close()

    holder = threading.Thread(target=hold)
    holder.start()
    ready.wait(5)
    try:
        yield holder
    finally:
        holder.join()


def _job(store: ManagedJobStore) -> int:
    return store.add("train", "/tmp/train.yaml", JobSpecDoc.model_validate({}), 1)


def test_a_renewal_the_database_refuses_for_a_moment_keeps_the_lease(
        store: ManagedJobStore) -> None:
    job_id = _job(store)
    lease = Lease(store, job_id, ttl=3.0)        # renewed every second
    lease.acquire()
    try:
        with _write_locked(store.db.path, 1.3):  # at least one renewal gives up
            pass
        before = store.require(job_id).lease_until or 0
        time.sleep(1.5)
        assert not lease.lost.is_set()
        assert lease._thread is not None and lease._thread.is_alive()
        assert (store.require(job_id).lease_until or 0) > before   # renewed again
    finally:
        lease.release()
    assert store.require(job_id).lease_owner is None


def test_a_lease_not_renewed_for_its_whole_ttl_is_lost(store: ManagedJobStore) -> None:
    job_id = _job(store)
    lease = Lease(store, job_id, ttl=1.2)        # renewed every 0.4 s
    lease.acquire()
    try:
        with _write_locked(store.db.path, 2.5):
            assert lease.lost.wait(2.4), "the heartbeat died without saying the lease was lost"
    finally:
        lease.release()


def test_a_job_row_the_controller_cannot_read_does_not_end_its_supervision(
        store: ManagedJobStore, tmp_path: Path) -> None:
    """A job another skyc version wrote (a spec field this one does not know) makes the
    round that reads the jobs fail; the controller says so and keeps serving."""
    import io

    from skyc.jobs import handoff
    from skyc.jobs.daemon import Daemon
    from skyc.state.records import dump_payload

    job_id = _job(store)
    with store.db.transaction() as conn:
        conn.execute("UPDATE managed_jobs SET spec = ?, status = 'RUNNING' WHERE id = ?",
                     (dump_payload({"cwd": ".", "priority": 3}), job_id))
    log = io.StringIO()
    daemon = Daemon(log, idle_s=60)
    daemon.poll_s = 0.05
    errors: list[BaseException] = []

    def serve() -> None:
        try:
            daemon.serve()
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        assert wait_for_ping(5.0) == daemon.pid, (errors, log.getvalue())
        time.sleep(0.5)                      # several rounds read the jobs
        assert thread.is_alive() and errors == [], (errors, log.getvalue())
        assert handoff.ping() == daemon.pid
        assert log.getvalue().count("cannot read the managed jobs: ValidationError") == 1
    finally:
        daemon.idle_s = 0.0                  # no worker: it exits at the next round
        thread.join(timeout=10)
    assert not thread.is_alive()


def wait_for_ping(timeout: float) -> int | None:
    from skyc.jobs import handoff

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pid = handoff.ping(timeout=0.5)
        if pid is not None:
            return pid
        time.sleep(0.05)
    return None


def test_the_offline_pulumi_preview_runs_in_controller_threads_at_once(tmp_path: Path) -> None:
    """Each job's controller is a thread: the preview (Pulumi's mock runtime, whose
    settings are the process's) must work there, two at once each seeing its own."""
    pytest.importorskip("pulumi_aws", reason="the Pulumi SDKs (skyc[pulumi]) are not installed")
    from skyc.stacks.pulumi_preview import preview
    from tests.compiler.golden import compile_case

    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "compile" / "aws"
    stacks = [compile_case(fixtures / case, tmp_path / case)
              for case in ("gpu_2node_spot", "cpu_arm_single")]
    alone = [sorted(c.address for c in preview(stack).changes) for stack in stacks]
    assert alone[0] != alone[1]
    seen: dict[int, list[str] | str] = {}

    def run(i: int) -> None:
        try:
            seen[i] = sorted(c.address for c in preview(stacks[i]).changes)
        except Exception as exc:  # reported by the assertion below
            seen[i] = f"{type(exc).__name__}: {exc}"

    for _ in range(3):
        threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert [seen[0], seen[1]] == alone


def _holders(needle: bytes, *roots: object) -> list[str]:
    """Containers (dicts, lists, tuples, sets) holding the string ``needle`` among what
    ``roots`` and every other thread's frames reach (modules and classes are not
    followed: the scan is of the controller's objects, not of everything loaded)."""
    import gc
    import sys
    import threading
    import types

    gc.collect()
    text = needle.decode()
    me = threading.get_ident()
    todo: list[object] = [*roots, *(f for t, f in sys._current_frames().items() if t != me)]
    seen: set[int] = set()
    found = []
    while todo:
        obj = todo.pop()
        if id(obj) in seen or isinstance(obj, (types.ModuleType, type)):
            continue
        seen.add(id(obj))
        if isinstance(obj, types.FrameType):
            todo.append(obj.f_locals)
            if obj.f_back is not None:
                todo.append(obj.f_back)
            continue
        try:
            if isinstance(obj, dict):
                hit = text in obj.values() or text in obj
            elif isinstance(obj, (list, tuple, set, frozenset)):
                hit = text in obj
            else:
                hit = False
        except Exception:  # an element whose == refuses a str (e.g. a version)
            hit = False
        if hit:
            found.append(type(obj).__name__)
        todo.extend(gc.get_referents(obj))
    return found


def test_a_jobs_secrets_are_not_kept_once_its_worker_has_ended(
        store: ManagedJobStore, tmp_path: Path) -> None:
    """The controller's worker for a job gets its secrets; once the job has ended (here
    FAILED: its task file is gone) nothing the controller or its threads reach still
    holds them."""
    import io

    from skyc.jobs.daemon import Daemon

    secret = b"tok-" + os.urandom(8).hex().encode()
    spec = JobSpecDoc.model_validate({"from_stdin": ["TOKEN"]})
    job_id = store.add("train", str(tmp_path / "gone.yaml"), spec, 1)
    daemon = Daemon(io.StringIO(), idle_s=60)
    daemon._start(job_id, {"TOKEN": secret.decode()}, {})
    daemon.workers[job_id].join(timeout=60)
    # its cancel watch ended with it (it holds the controller, and so the secrets)
    import threading

    assert [t.name for t in threading.enumerate() if t.name == f"cancel-{job_id}"] == []
    done = store.require(job_id)
    assert done.status == "FAILED" and "cannot load the task" in (done.failure or "")
    daemon._reap()
    assert daemon.workers == {}
    assert _holders(secret, daemon) == []
    # and a holder is found where there is one: an object's, or a thread's local
    daemon.kept = [{"TOKEN": secret.decode()}]
    assert _holders(secret, daemon) == ["dict"]
    del daemon.kept
    release = threading.Event()

    def holding(value: str = secret.decode()) -> None:
        release.wait(30)

    holder = threading.Thread(target=holding)
    holder.start()
    try:
        assert "dict" in _holders(secret, daemon)  # its frame's locals
    finally:
        release.set()
        holder.join()
    daemon.store.close()
