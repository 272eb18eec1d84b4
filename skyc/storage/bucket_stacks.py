"""The stack of a bucket skyc creates, built by the target whose nodes reach the
bucket's store natively (``storage`` part: S3 by AWS, GCS by GCP, Azure containers by
Azure; R2 through AWS's provider). One stack per
bucket, ``storage-<bucket>``, in ``$SKYC_HOME/storage/<bucket>/``: it outlives clusters
when persistent, else it is destroyed with the cluster that made it."""

from __future__ import annotations

from skyc.errors import StorageError
from skyc.model.stack import Stack
from skyc.settings.config import SkycConfig
from skyc.storage.uses import BucketUse

# R2, no cloud's own store: a target whose provider speaks its API creates its buckets
# (``Storage.ALSO_CREATES``), with R2's keys given to the engine (skyc.storage.r2_engine).
R2 = "r2"


def stack_name(bucket: str) -> str:
    return f"storage-{bucket}"


def bucket_labels(use: BucketUse, owner: str, cluster: str | None) -> dict[str, str]:
    labels = {"skyc-bucket": use.bucket, "skyc-owner": owner,
              "skyc-persistent": "true" if use.persistent else "false"}
    if cluster is not None and not use.persistent:
        labels["skyc-cluster"] = cluster
    return labels


def bucket_stack(use: BucketUse, region: str, labels: dict[str, str],
                 config: SkycConfig) -> Stack:
    """The stack that creates ``use``'s bucket in ``region``."""
    from skyc.storage.stores import store_target

    found = store_target(use.store)
    part = found.storage() if found is not None else None
    if part is None:
        raise StorageError(f"{use.field}: skyc cannot create {use.store} buckets yet",
                           hint="create the bucket yourself and name it as source")
    return part.bucket_stack(use, region, labels, config)


def engine_env(store_name: str, config: SkycConfig) -> dict[str, str] | None:
    """What the engine's processes get besides this one's environment to apply or
    destroy a bucket stack of store ``store_name`` (None: nothing)."""
    if store_name == R2:
        from skyc.storage import r2_engine

        return r2_engine.engine_env(config)
    return None
