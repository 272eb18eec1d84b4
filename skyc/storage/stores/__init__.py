"""The stores a task's buckets live in, one module each, loaded by name."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from skyc.errors import StorageError
from skyc.storage.stores.base import BucketPath, Store

if TYPE_CHECKING:
    from skyc.compiler.contract import Target

STORE_NAMES = ("s3", "gcs", "azure", "r2")
_LOADED: dict[str, Store] = {}


def store(name: str) -> Store:
    """The store ``name`` (s3, gcs, azure, r2)."""
    if name not in STORE_NAMES:
        raise StorageError(f"store: {name!r} is not a store skyc can use",
                            hint=f"use one of {', '.join(STORE_NAMES)}")
    if name not in _LOADED:
        module = importlib.import_module(f"skyc.storage.stores.{name}")
        _LOADED[name] = module.STORE
    return _LOADED[name]


def store_of_url(url: str) -> Store | None:
    """The store a bucket URL is in; None for what is not a bucket URL."""
    for name in STORE_NAMES:
        found = store(name)
        if found.owns(url) and found.matches(url):
            return found
    return None


def parse_bucket_url(url: str) -> BucketPath:
    found = store_of_url(url)
    if found is None:
        raise StorageError(f"{url!r} is not a bucket URL skyc can read",
                            hint="use s3://, gs://, r2:// or an Azure blob URL "
                            "(https://ACCOUNT.blob.core.windows.net/CONTAINER)")
    return found.parse_url(url)


def native_store(cloud: str) -> Store | None:
    """The store whose buckets a target's nodes reach natively (its ``storage`` part)."""
    from skyc.compiler import target

    part = target(cloud).storage()
    return store(part.STORE) if part is not None else None


def store_target(name: str) -> Target | None:
    """The target that creates store ``name``'s buckets: the one whose nodes reach it
    natively, else one whose provider speaks its API (R2: AWS's); None for none."""
    from skyc.compiler import target, target_names

    for cloud in target_names():
        part = target(cloud).storage()
        if part is not None and name == part.STORE:
            return target(cloud)
    for cloud in target_names():
        part = target(cloud).storage()
        if part is not None and name in part.ALSO_CREATES:
            return target(cloud)
    return None


__all__ = ["STORE_NAMES", "BucketPath", "Store", "native_store", "parse_bucket_url",
           "store", "store_of_url", "store_target"]
