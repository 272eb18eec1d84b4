"""The stack of a bucket skyc creates, built by the target whose nodes reach the
bucket's store natively (``storage`` part: S3 by AWS, GCS by GCP). One stack per
bucket, ``storage-<bucket>``, in ``$SKYC_HOME/storage/<bucket>/``: it outlives clusters
when persistent, else it is destroyed with the cluster that made it."""

from __future__ import annotations

from skyc.errors import StorageError
from skyc.model.stack import Stack
from skyc.settings.config import SkycConfig
from skyc.storage.uses import BucketUse


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
