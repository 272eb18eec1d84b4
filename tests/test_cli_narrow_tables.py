"""Tables at 80 columns drop lesser columns instead of cutting cells, and say only what
they show (jobs queue, show-gpus)."""

from __future__ import annotations

from pathlib import Path

from tests.plan_diff.test_plan_diff import home, skyc

__all__ = ["home"]


def _record(home: Path, status: str) -> None:
    from skyc.model.managed_jobs import JobSpecDoc
    from skyc.state.database import StateDB
    from skyc.state.managed_jobs import ManagedJobStore

    store = ManagedJobStore(StateDB(home / ".skyc" / "state.db"))
    try:
        job_id = store.add("a-long-training-run", str(home / "t.yaml"), JobSpecDoc(), 1)
        store.set_status(job_id, status, "test", cluster=f"skyc-job-{job_id}")  # type: ignore[arg-type]
    finally:
        store.close()


def test_queue_fits_80_columns_with_whole_cells(home: Path) -> None:
    (home / ".skyc").mkdir()
    for status in ("SUCCEEDED", "CANCELLED"):
        _record(home, status)
    out = skyc(home, "jobs", "queue", COLUMNS="80")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), out.stdout
    assert "…" not in out.stdout
    assert "SUCCEEDED" in out.stdout and "CANCELLED" in out.stdout
    assert "a-long-training-run" in out.stdout
    wide = skyc(home, "jobs", "queue", COLUMNS="200")
    assert "CONTROLLER" in wide.stdout and "CONTROLLER" not in out.stdout


def test_show_gpus_footer_explains_only_the_columns_shown(home: Path) -> None:
    narrow = skyc(home, "show-gpus", "H100:8", COLUMNS="80")
    assert narrow.returncode == 0, narrow.stderr
    assert " regions" not in narrow.stdout.splitlines()[1]  # the header row
    assert "regions:" not in narrow.stdout
    wide = skyc(home, "show-gpus", "H100:8", COLUMNS="200")
    assert "regions: how many offer it" in wide.stdout
