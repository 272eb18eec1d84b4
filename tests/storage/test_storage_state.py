"""The buckets skyc created, in the state database (sqlite here; the same SQL runs on
PostgreSQL, see tests/state): which clusters use a bucket, a managed job's included."""

from __future__ import annotations

from pathlib import Path

from skyc.model.managed_jobs import JobSpecDoc
from skyc.state.database import ClusterRecord, StateDB
from skyc.state.managed_jobs import ManagedJobStore
from skyc.state.storage import (
    StorageRecord,
    add_storage_user,
    get_storage,
    list_storage,
    live_users,
    put_storage,
    remove_storage,
    set_storage_status,
)


def test_users_are_the_clusters_still_there_and_unfinished_managed_jobs(
        tmp_path: Path) -> None:
    with StateDB(tmp_path / "state.db") as db:
        put_storage(db, StorageRecord(name="ckpts", store="s3", url="s3://ckpts",
                                      persistent=False, cluster="train", owner="alice"))
        for cluster in ("train", "train", "gone", "skyc-job-1"):
            add_storage_user(db, "ckpts", cluster)
        db.upsert_cluster(ClusterRecord(name="train", cloud="local", status="UP"))
        record = get_storage(db, "ckpts")
        assert record is not None and record.users == ["gone", "skyc-job-1", "train"]
        assert live_users(db, record) == ["train"]
        jobs = ManagedJobStore(db)
        job = jobs.add("mj", "/tasks/t.yaml", JobSpecDoc(), 1)
        assert job == 1
        # Between two attempts the job has no cluster: its bucket is still in use.
        assert live_users(db, record) == ["skyc-job-1", "train"]
        jobs.set_status(job, "SUCCEEDED", "done")
        assert live_users(db, record) == ["train"]
        set_storage_status(db, "ckpts", "READY")
        put_storage(db, StorageRecord(name="ckpts", store="s3", url="s3://ckpts",
                                      status="READY", owner="bob"))  # an update
        again = get_storage(db, "ckpts")
        assert again is not None and again.owner == "alice" and again.users == record.users
        assert [r.name for r in list_storage(db)] == ["ckpts"]
        assert remove_storage(db, "ckpts") and get_storage(db, "ckpts") is None
