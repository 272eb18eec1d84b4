"""The buckets skyc created, in the state database (table ``storage``).

A bucket is recorded from before its stack is applied (CREATING) until its stack is
destroyed; ``users`` names the clusters that mounted it (a cluster no longer in the
state does not count). A bucket that is not persistent names the ``cluster`` it goes
with: it is destroyed with that cluster.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from skyc.errors import StateError
from skyc.state.records import dump_payload, load_payload

if TYPE_CHECKING:
    from skyc.state.database import StateDB

# The store of a volume (a Kubernetes PersistentVolumeClaim, skyc.apply.volumes): kept in
# this table beside the buckets, listed and deleted by `skyc volumes`.
VOLUME_STORE = "k8s-pvc"
StorageStatus = Literal["CREATING", "READY", "DELETING", "FAILED"]


class StorageRecord(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    name: str
    store: str
    region: str | None = None
    url: str
    status: StorageStatus = "CREATING"
    persistent: bool = True
    cluster: str | None = None          # the cluster it goes with (not persistent)
    users: list[str] = Field(default_factory=list)  # clusters that mounted it
    workspace: str | None = None
    engine: str | None = None
    owner: str | None = None
    created_at: float = 0.0
    updated_at: float | None = None


def storage_from_row(row: Mapping[str, Any]) -> StorageRecord:
    return StorageRecord(
        name=row["name"], store=row["store"], region=row["region"], url=row["url"],
        status=row["status"], persistent=bool(row["persistent"]), cluster=row["cluster"],
        users=load_payload(row["users"], f"storage '{row['name']}' users") or [],
        workspace=row["workspace"], engine=row["engine"], owner=row["owner"],
        created_at=row["created_at"], updated_at=row["updated_at"])


def put_storage(db: StateDB, record: StorageRecord) -> None:
    """Record the bucket, or update its record (its users and owner are kept)."""
    now = time.time()
    with db.transaction() as tx:
        tx.execute(
            """
            INSERT INTO storage (name, store, region, url, status, persistent, cluster,
                users, workspace, engine, owner, created_at, updated_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (name) DO UPDATE SET
                status = excluded.status, region = excluded.region,
                workspace = excluded.workspace, engine = excluded.engine,
                updated_at = excluded.updated_at
            """,
            (record.name, record.store, record.region, record.url, record.status,
             int(record.persistent), record.cluster, dump_payload(record.users),
             record.workspace, record.engine, record.owner or db.caller(),
             record.created_at or now, now))


def get_storage(db: StateDB, name: str) -> StorageRecord | None:
    rows = db.query("SELECT * FROM storage WHERE name = ?", (name,))
    return storage_from_row(rows[0]) if rows else None


def list_storage(db: StateDB) -> list[StorageRecord]:
    return [storage_from_row(r) for r in db.query("SELECT * FROM storage ORDER BY name")]


def set_storage_status(db: StateDB, name: str, status: StorageStatus) -> None:
    with db.transaction() as tx:
        if not tx.execute("UPDATE storage SET status = ?, updated_at = ? WHERE name = ?",
                          (status, time.time(), name)):
            raise StateError(f"no bucket named {name!r} in the state database")


def add_storage_user(db: StateDB, name: str, cluster: str) -> None:
    """Record that ``cluster`` mounts the bucket ``name``."""
    with db.transaction() as tx:
        rows = tx.rows("SELECT users FROM storage WHERE name = ?", (name,))
        if not rows:
            return
        users = load_payload(rows[0]["users"], f"storage '{name}' users") or []
        if cluster not in users:
            tx.execute("UPDATE storage SET users = ?, updated_at = ? WHERE name = ?",
                       (dump_payload(sorted([*users, cluster])), time.time(), name))


def live_users(db: StateDB, record: StorageRecord) -> list[str]:
    """The clusters still in the state that mount the bucket, and those of managed jobs
    not finished (between two attempts a job has no cluster, and mounts it again)."""
    from skyc.model.managed_jobs import cluster_for
    from skyc.state.managed_jobs import ManagedJobStore

    live = {c.name for c in db.list_clusters()}
    for job in ManagedJobStore(db).all_jobs():
        if not job.done:
            live |= {cluster_for(job, i) for i in range(job.num_tasks)}
    return [u for u in record.users if u in live]


def remove_storage(db: StateDB, name: str) -> bool:
    with db.transaction() as tx:
        return tx.execute("DELETE FROM storage WHERE name = ?", (name,)) > 0
