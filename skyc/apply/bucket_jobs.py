"""A job's buckets made ready on its cluster: what apply, exec, a managed job's
controller and a service's replicas call between having nodes and running the job."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skyc.apply.buckets import Say
    from skyc.model.nodes import ClusterInfo
    from skyc.runtime.spec import JobSpec
    from skyc.settings.config import SkycConfig
    from skyc.stacks.engine import ProgressCallback
    from skyc.state.database import StateDB


def has_buckets(task: Any) -> bool:
    """Whether the task mounts or copies a bucket (a mapping, or a bucket URL)."""
    from skyc.task.buckets import local_source

    mounts = (getattr(task, "file_mounts", None) or {}).values()
    return any(local_source(s) is None for s in mounts)


def job_with_buckets(task: Any, spec: JobSpec, info: ClusterInfo, say: Say, *,
                     progress: ProgressCallback | None = None, check: bool = True,
                     config: SkycConfig | None = None, db: StateDB | None = None) -> JobSpec:
    """``spec`` with the task's buckets: checked (``check``: a bucket read exists, a new
    one's name is free), created or used again, filled with their local sources, and
    given to the job with the nodes' mount settings. ``spec`` as it is without buckets."""
    if not has_buckets(task):
        return spec
    from pydantic import SecretStr

    from skyc.apply.buckets import check_buckets, prepare_buckets
    from skyc.settings.config import load_config
    from skyc.state.database import StateDB

    config = config or load_config()
    own = db is None
    state = db if db is not None else StateDB()
    try:
        if check:
            check_buckets(task, info.cloud, config, state)
        ready = prepare_buckets(task, info.name, info.cloud, info.region, config, state,
                                say, progress)
    finally:
        if own:
            state.close()
    return spec.model_copy(update={
        "buckets": ready.mounts(),
        "bucket_env": {k: SecretStr(v) for k, v in ready.env.items()}})


def buckets_going_with(clusters: list[str]) -> list[str]:
    """What ``down`` of ``clusters`` deletes besides them: each bucket that goes with one
    (not persistent) and that no other cluster mounts, said as ``s3://x (holds data)``."""
    from skyc.state.database import StateDB
    from skyc.state.storage import list_storage, live_users

    with StateDB() as db:
        records = [r for r in list_storage(db) if not r.persistent and r.cluster in clusters
                   and set(live_users(db, r)) <= set(clusters)]
    return [f"{r.url} ({'holds data' if _holds_data(r.url) else 'empty'})" for r in records]


def _holds_data(url: str) -> bool:
    """Whether a bucket has any object (True when it cannot be asked: say it may)."""
    from skyc.errors import StorageError
    from skyc.settings.config import load_config
    from skyc.storage import rclone
    from skyc.storage.access import rclone_env
    from skyc.storage.stores import parse_bucket_url
    from skyc.storage.uses import BucketUse

    where = parse_bucket_url(url)
    use = BucketUse(target="/", store=where.store, bucket=where.bucket,
                    account=where.account, mode="MOUNT", created=True)
    try:
        done = rclone.run(["lsf", "--max-depth", "1", use.remote],
                          rclone_env([use], load_config()))
    except StorageError:
        return True
    return done.returncode != 0 or bool(done.stdout.strip())


def compiled_bucket_stacks(task: Any, cluster: str, cloud: str, region: str | None,
                           config: SkycConfig) -> list[Any]:
    """The stacks of the buckets ``task`` creates, as apply writes them for its cluster
    ``cluster`` placed on ``cloud``/``region`` (``skyc compile`` writes them beside the
    cluster's)."""
    from skyc.apply.buckets import bucket_region, task_uses
    from skyc.model.owner import owner
    from skyc.storage.bucket_stacks import bucket_labels, bucket_stack

    who = owner(config)
    return [bucket_stack(u, bucket_region(u, cloud, region),
                         bucket_labels(u, who, cluster), config)
            for u in task_uses(task, cloud, config) if u.created]
