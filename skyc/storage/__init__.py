"""Buckets: the stores they live in, a task's bucket mounts, the stacks of the buckets
skyc creates, and what the nodes are given to reach them."""

from __future__ import annotations

from skyc.storage.stores import BucketPath, Store, parse_bucket_url, store
from skyc.storage.uses import BucketUse, bucket_uses, check_target

__all__ = ["BucketPath", "BucketUse", "Store", "bucket_uses", "check_target",
           "parse_bucket_url", "store"]
