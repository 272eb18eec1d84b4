"""A task's buckets around a cluster's life: checked before anything is provisioned,
created (each bucket skyc makes is a stack of its own), filled with the task's local
sources and handed to the nodes before the job, destroyed with the cluster when not
persistent, deleted on request (``skyc storage delete``) when no cluster uses them."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skyc.errors import ApplyFailed, StorageError
from skyc.settings.config import SkycConfig
from skyc.storage.access import DEFAULT_S3_REGION, rclone_env, reach_problem, s3_configured
from skyc.storage.bucket_stacks import R2
from skyc.storage.r2_engine import REGION as R2_REGION
from skyc.storage.stores import store
from skyc.storage.uses import BucketUse, bucket_uses

if TYPE_CHECKING:
    from skyc.runtime.spec import BucketMount
    from skyc.stacks.engine import ProgressCallback
    from skyc.state.database import StateDB
    from skyc.state.storage import StorageRecord

Say = Callable[[str, str], None]  # (stage, detail)
BUCKET_LOCK_TIMEOUT_S = 600.0


@dataclass
class Buckets:
    """A task's buckets, ready for its nodes."""

    uses: list[BucketUse] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)  # the nodes' mount settings

    def mounts(self) -> list[BucketMount]:
        from skyc.runtime.spec import BucketMount

        return [BucketMount(target=u.target, remote=u.remote, mode=u.mode) for u in self.uses]


def storage_workspace(bucket: str) -> Path:
    from skyc.settings.home import skyc_home

    return skyc_home() / "storage" / bucket


def task_uses(task: Any, cloud: str | None, config: SkycConfig) -> list[BucketUse]:
    return bucket_uses(task, cloud, s3_configured=s3_configured(
        config, os.environ, Path.home()))


def bucket_region(use: BucketUse, cloud: str, region: str | None) -> str:
    """A created bucket's region: the cluster's, on the cloud whose store it is; else the
    store's default region (S3's: AWS_DEFAULT_REGION when set)."""
    from skyc.storage.stores import native_store, store_target

    native = native_store(cloud)
    if native is not None and native.name == use.store and region:
        return region
    if use.store == R2:
        return R2_REGION
    owner = store_target(use.store)
    part = owner.storage() if owner is not None else None
    if part is None or use.store == "s3":
        return os.environ.get("AWS_DEFAULT_REGION") or DEFAULT_S3_REGION
    return part.DEFAULT_REGION


def check_buckets(task: Any, cloud: str, config: SkycConfig, db: StateDB) -> list[BucketUse]:
    """Before provisioning: every bucket the task reads exists and is readable, every
    bucket it creates is free (or skyc's own from before), every local source exists."""
    from skyc.state.storage import get_storage
    from skyc.storage.checks import check_created, check_source

    uses = task_uses(task, cloud, config)
    if not uses:
        return uses
    for use in uses:
        problem = reach_problem(use, config, cloud)
        if problem is not None:
            raise StorageError(problem, hint=store(use.store).credentials_help or None)
    settings = rclone_env(uses, config)
    for use in uses:
        if not use.created:
            check_source(use, settings)
            continue
        for source in use.uploads:
            if not Path(source).expanduser().exists():
                raise StorageError(f"{use.field}.source: {source} does not exist on this "
                                   "machine")
        check_created(use, settings, ours=get_storage(db, use.bucket) is not None)
    return uses


def create_buckets(uses: list[BucketUse], cluster: str, cloud: str, region: str | None,
                   config: SkycConfig, db: StateDB, say: Say,
                   progress: ProgressCallback | None = None) -> dict[str, str]:
    """Create the buckets of ``uses`` skyc makes (or use its own again) for cluster
    ``cluster`` placed on ``cloud``/``region``; each one's region, by name (a bucket made
    before keeps the region it was made in)."""
    from skyc.state.storage import get_storage

    regions = {}
    for use in uses:
        if not use.created:
            continue
        record = get_storage(db, use.bucket)
        regions[use.bucket] = (record.region if record is not None and record.region
                               else bucket_region(use, cloud, region))
        ensure_bucket(use, regions[use.bucket], cluster, config, db, say, progress)
    return regions


def make_task_buckets(task: Any, cluster: str, placement: Any, config: SkycConfig,
                      db: StateDB, say: Say, progress: ProgressCallback | None = None
                      ) -> None:
    """Before the cluster is provisioned: the buckets its task creates exist, so the
    cluster's stack can grant its identity each of them (GCP and Azure bind a role on
    the bucket itself, which must exist first)."""
    create_buckets(task_uses(task, placement.cloud, config), cluster, placement.cloud,
                   placement.region, config, db, say, progress)


def prepare_buckets(task: Any, cluster: str, cloud: str, region: str | None,
                    config: SkycConfig, db: StateDB, say: Say,
                    progress: ProgressCallback | None = None) -> Buckets:
    """Create the task's new buckets (or use skyc's own again), upload their local
    sources, record the cluster among their users; the nodes' mount settings."""
    from skyc.state.storage import add_storage_user

    uses = task_uses(task, cloud, config)
    regions = create_buckets(uses, cluster, cloud, region, config, db, say, progress)
    for use in uses:
        if use.created:
            add_storage_user(db, use.bucket, cluster)
    from skyc.apply.bucket_uploads import upload_sources

    here = rclone_env(uses, config, regions=regions)  # this machine: the user's own
    for use in uses:
        if use.uploads:
            upload_sources(use, here, say, storage_workspace(use.bucket))
    return Buckets(uses, rclone_env(uses, config, regions=regions, cloud=cloud))


# The buckets this process created: an apply makes them before its cluster, and finds
# them ready again when its job mounts them.
_MADE_HERE: set[str] = set()


def ensure_bucket(use: BucketUse, region: str, cluster: str, config: SkycConfig,
                  db: StateDB, say: Say, progress: ProgressCallback | None) -> None:
    """The bucket's stack applied; recorded READY. A failed apply destroys what it made."""
    from skyc.model.owner import owner
    from skyc.state.locks import cluster_lock
    from skyc.state.storage import StorageRecord, get_storage, put_storage
    from skyc.storage.bucket_stacks import bucket_labels, bucket_stack, engine_env, stack_name

    record = get_storage(db, use.bucket)
    if record is not None and record.status == "READY":
        if use.bucket not in _MADE_HERE:  # made by this run before its cluster: said then
            say("bucket", f"{use.url} (created before; used again)")
        return
    who = record.owner if record is not None and record.owner else owner(config)
    made_for = record.cluster if record is not None else cluster
    stack = bucket_stack(use, region, bucket_labels(use, who, made_for), config)
    workspace = storage_workspace(use.bucket)
    env = engine_env(use.store, config)  # refused here, before anything is recorded
    with cluster_lock(stack_name(use.bucket), timeout=BUCKET_LOCK_TIMEOUT_S):
        # R2's stack runs with R2's keys as the engine's AWS keys: terraform, whose
        # state is the workspace's own (a Pulumi backend in S3 would need AWS's keys)
        engine = _write(stack, workspace, config, "terraform" if use.store == R2 else None)
        put_storage(db, StorageRecord(
            name=use.bucket, store=use.store, region=region, url=use.url,
            status="CREATING", persistent=use.persistent,
            cluster=None if use.persistent else made_for, workspace=str(workspace),
            engine=engine, owner=who))
        kind = "persistent" if use.persistent else f"goes with cluster {made_for}"
        say("bucket", f"creating {use.url} ({kind})")
        _apply(use, workspace, engine, db, progress, env)
    _MADE_HERE.add(use.bucket)


def _write(stack: Any, workspace: Path, config: SkycConfig, engine: str | None = None
           ) -> str:
    from skyc.compiler import choose_engine
    from skyc.stacks.registry import open_engine, write_stack

    name = choose_engine(stack.cloud, engine, config)
    driver = open_engine(name, workspace)
    workspace.mkdir(parents=True, exist_ok=True)
    write_stack(stack, workspace, {}, engine=name)
    driver.prepare(stack)
    return name


def _apply(use: BucketUse, workspace: Path, engine: str, db: StateDB,
           progress: ProgressCallback | None, env: dict[str, str] | None) -> None:
    from skyc.stacks.registry import open_engine
    from skyc.state.storage import remove_storage, set_storage_status

    driver = open_engine(engine, workspace, env)
    try:
        diff = driver.plan()
        if diff.has_changes:
            driver.apply(diff, progress)
    except ApplyFailed as exc:
        try:
            driver.destroy(progress)
        except ApplyFailed:
            set_storage_status(db, use.bucket, "FAILED")
            raise StorageError(
                f"{use.field}: creating {use.url} failed ({exc}), and so did removing "
                "what was made", hint=f"skyc storage delete {use.bucket}") from exc
        remove_storage(db, use.bucket)
        _clear(workspace)
        raise StorageError(f"{use.field}: creating {use.url} failed: {exc}",
                           hint=exc.hint) from exc
    set_storage_status(db, use.bucket, "READY")


def destroy_bucket(record: StorageRecord, db: StateDB,
                   progress: ProgressCallback | None = None) -> None:
    """Destroy the bucket's stack (its objects with it) and forget it."""
    from skyc.stacks.registry import open_engine, stack_engine
    from skyc.state.locks import cluster_lock
    from skyc.state.storage import remove_storage, set_storage_status
    from skyc.storage.bucket_stacks import engine_env, stack_name

    workspace = Path(record.workspace) if record.workspace else storage_workspace(
        record.name)
    with cluster_lock(stack_name(record.name), timeout=BUCKET_LOCK_TIMEOUT_S):
        engine = stack_engine(workspace)
        if engine is None:
            raise StorageError(
                f"bucket {record.name}: its stack is not in {workspace}",
                hint="delete it from the SKYC_HOME that created it")
        from skyc.settings.config import load_config

        env = engine_env(record.store, load_config())  # refused before the status moves
        set_storage_status(db, record.name, "DELETING")
        open_engine(engine, workspace, env).destroy(progress)
        remove_storage(db, record.name)
        _clear(workspace)


def _clear(workspace: Path) -> None:
    if workspace.is_dir():
        shutil.rmtree(workspace)


def delete_bucket(name: str, db: StateDB, progress: ProgressCallback | None = None) -> None:
    """``skyc storage delete NAME``: refused while a cluster mounts it."""
    from skyc.state.storage import VOLUME_STORE, get_storage, live_users

    record = get_storage(db, name)
    if record is not None and record.store == VOLUME_STORE:
        raise StorageError(f"{name} is a volume, not a bucket",
                           hint=f"skyc volumes delete {name}")
    if record is None:
        raise StorageError(f"no bucket named {name!r} that skyc created",
                           hint="see `skyc storage ls`; skyc never deletes a bucket it "
                           "did not create")
    users = live_users(db, record)
    if users:
        raise StorageError(f"bucket {name} is in use by cluster(s) {', '.join(users)}",
                           hint="take them down first (`skyc down NAME`)")
    destroy_bucket(record, db, progress)


def release_cluster_buckets(cluster: str, db: StateDB, say: Say,
                            progress: ProgressCallback | None = None) -> list[str]:
    """After cluster ``cluster`` is destroyed: destroy the buckets that went with it
    (not persistent) and that no other cluster mounts. The names destroyed."""
    from skyc.state.storage import list_storage, live_users

    gone = []
    for record in list_storage(db):
        if record.persistent or record.cluster != cluster:
            continue
        others = [u for u in live_users(db, record) if u != cluster]
        if others:
            say("bucket", f"{record.url} kept: cluster(s) {', '.join(others)} mount it")
            continue
        say("bucket", f"deleting {record.url} (not persistent)")
        destroy_bucket(record, db, progress)
        gone.append(record.name)
    return gone
