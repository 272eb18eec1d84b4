"""Volumes with a life of their own (SkyPilot's ``sky volumes``): a Kubernetes
PersistentVolumeClaim skyc creates from a volume file as a stack of its own
(``$SKYC_HOME/volumes/<name>/``), or records as it is (``use_existing``); listed and
deleted by name. Tasks mount them by name (``volumes: {/mnt/data: NAME}``). They are
kept in the state beside the buckets skyc created (store ``k8s-pvc``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from skyc.errors import ConfigError, StorageError
from skyc.state.storage import VOLUME_STORE

if TYPE_CHECKING:
    from skyc.settings.config import SkycConfig
    from skyc.stacks.engine import ProgressCallback
    from skyc.state.database import StateDB
    from skyc.state.storage import StorageRecord
    from skyc.task.volume_file import VolumeFile

STORE = VOLUME_STORE
LOCK_TIMEOUT_S = 600.0


def volume_workspace(name: str) -> Path:
    from skyc.settings.home import skyc_home

    return skyc_home() / "volumes" / name


def _context(volume: VolumeFile, config: SkycConfig) -> str:
    if volume.context:
        return volume.context
    known = sorted(config.kubernetes.contexts)
    if len(known) == 1:
        return known[0]
    raise ConfigError(f"infra: {volume.infra!r} names no Kubernetes context",
                      hint="write infra: k8s/CONTEXT")


def apply_volume(volume: VolumeFile, config: SkycConfig, db: StateDB,
                 progress: ProgressCallback | None = None) -> StorageRecord:
    """Create the volume's claim (or record an existing one); its record."""
    from skyc.compiler import choose_engine
    from skyc.compiler.kubernetes.volumes import volume_stack
    from skyc.model.owner import owner
    from skyc.stacks.registry import open_engine, write_stack
    from skyc.state.locks import cluster_lock
    from skyc.state.storage import StorageRecord, get_storage, put_storage, set_storage_status

    context = _context(volume, config)
    namespace = volume.config.namespace
    known = get_storage(db, volume.name)
    if known is not None and known.store != STORE:
        raise StorageError(f"name: {volume.name!r} is a bucket skyc created; a volume "
                           "needs a name of its own")
    record = StorageRecord(
        name=volume.name, store=STORE, region=context, status="CREATING", persistent=True,
        url=f"{STORE}://{context}/{namespace or 'default'}/{volume.name}", owner=owner(config))
    if volume.use_existing:
        put_storage(db, record.model_copy(update={"status": "READY"}))
        return record.model_copy(update={"status": "READY"})
    workspace = volume_workspace(volume.name)
    stack = volume_stack(volume, context, namespace,
                         {"skyc-volume": volume.name, "skyc-owner": owner(config)})
    with cluster_lock(stack.name, timeout=LOCK_TIMEOUT_S):
        engine = choose_engine(stack.cloud, None, config)
        driver = open_engine(engine, workspace)
        workspace.mkdir(parents=True, exist_ok=True)
        write_stack(stack, workspace, {}, engine=engine)
        driver.prepare(stack)
        put_storage(db, record.model_copy(update={"workspace": str(workspace),
                                                  "engine": engine}))
        diff = driver.plan()
        if diff.has_changes:
            driver.apply(diff, progress)
        set_storage_status(db, volume.name, "READY")
    return record.model_copy(update={"status": "READY", "workspace": str(workspace)})


def list_volumes(db: StateDB) -> list[StorageRecord]:
    from skyc.state.storage import list_storage

    return [r for r in list_storage(db) if r.store == STORE]


def delete_volume(name: str, db: StateDB, progress: ProgressCallback | None = None) -> None:
    """Delete a volume skyc created (its claim and data), or forget one it recorded."""
    import shutil

    from skyc.stacks.registry import open_engine, stack_engine
    from skyc.state.storage import get_storage, live_users, remove_storage

    record = get_storage(db, name)
    if record is None or record.store != STORE:
        raise StorageError(f"no volume named {name!r}", hint="see `skyc volumes ls`")
    users = live_users(db, record)
    if users:
        raise StorageError(f"volume {name} is in use by cluster(s) {', '.join(users)}",
                           hint="take them down first (`skyc down NAME`)")
    workspace = Path(record.workspace) if record.workspace else None
    engine = stack_engine(workspace) if workspace is not None else None
    if workspace is not None and engine is not None:
        open_engine(engine, workspace).destroy(progress)
        shutil.rmtree(workspace, ignore_errors=True)
    remove_storage(db, name)


def record_volume_users(task: object, cluster: str, db: StateDB) -> None:
    """The cluster mounts the volumes its task names (those skyc knows): each is in use
    while the cluster is up (``volumes delete`` refuses it)."""
    from skyc.state.storage import add_storage_user, get_storage

    for spec in (getattr(task, "volumes", None) or {}).values():
        if isinstance(spec, str):
            record = get_storage(db, spec)
            if record is not None and record.store == STORE:
                add_storage_user(db, spec, cluster)
