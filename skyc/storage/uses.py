"""A task's buckets, as skyc uses them: where each is mounted, in which store, how,
and whether skyc creates it (:class:`BucketUse`), read from ``file_mounts``.

SkyPilot's meanings: ``/path: s3://bucket/prefix`` is copied onto the nodes (COPY); a
mapping mounts by default (MOUNT). A mapping with ``name`` is a bucket skyc creates
(and uses again when it created it before), uploading the local ``source`` paths into
it; a mapping whose ``source`` is a bucket URL reads that bucket, which skyc never
creates, changes or deletes.
"""

from __future__ import annotations

import posixpath
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from skyc.errors import StorageError
from skyc.storage.stores import (
    BucketPath,
    Store,
    native_store,
    store,
    store_of_url,
    store_target,
)

Mode = Literal["MOUNT", "COPY", "MOUNT_CACHED"]

# Where a bucket may not be mounted: the system's own directories (and what is below
# the kernel's and the boot's), and the home's keys and skyc's own files on the node.
_SYSTEM_DIRS = ("/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64",
                "/opt", "/proc", "/root", "/run", "/sbin", "/srv", "/sys", "/tmp", "/usr",
                "/var")
_SYSTEM_TREES = ("/bin/", "/boot/", "/dev/", "/etc/", "/lib/", "/lib64/", "/proc/",
                 "/sbin/", "/sys/", "/usr/")
_HOME_KEPT = ("~", "~/.ssh", "~/.skyc", "~/sky_workdir")


class BucketUse(BaseModel):
    """One bucket mount of a task."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    target: str                     # where on the nodes
    store: str                      # s3, gcs, azure, r2
    bucket: str
    path: str = ""                  # inside the bucket
    account: str = ""               # Azure's storage account
    mode: Mode
    created: bool                   # skyc creates it (named), else it is read as it is
    persistent: bool = True         # a created bucket outlives the cluster
    uploads: tuple[str, ...] = ()   # local paths uploaded into a created bucket

    @property
    def field(self) -> str:
        return f"file_mounts.{self.target}"

    @property
    def url(self) -> str:
        return store(self.store).url(self.location)

    @property
    def location(self) -> BucketPath:
        return BucketPath(self.store, self.bucket, self.path, self.account)

    @property
    def remote(self) -> str:
        return store(self.store).remote_path(self.location)


def check_target(target: str) -> None:
    """A bucket is never mounted over a system directory or the home's own files."""
    clean = posixpath.normpath(target) if target.startswith("/") else target.rstrip("/")
    if clean in _SYSTEM_DIRS or clean.startswith(_SYSTEM_TREES) or clean in _HOME_KEPT:
        raise StorageError(
            f"file_mounts.{target}: a bucket cannot be mounted over {clean}, which the "
            "system or skyc needs",
            hint="mount it on a path of its own, e.g. /data or ~/data")


def bucket_uses(task: Any, cloud: str | None, *, s3_configured: bool) -> list[BucketUse]:
    """The task's bucket mounts, in target order. ``cloud``: the target the task lands
    on (None while it is not placed yet: a created bucket's store is then only checked
    when named). ``s3_configured``: AWS credentials or an AWS-compatible endpoint are
    set up (a created bucket of a task placed off the clouds goes there)."""
    uses = []
    for target, source in sorted(dict(getattr(task, "file_mounts", None) or {}).items()):
        if isinstance(source, str):
            if store_of_url(source) is None:
                if "://" in source:
                    raise StorageError(
                        f"file_mounts.{target}: {source!r} is not a bucket URL skyc can "
                        "read", hint="use s3://, gs://, r2:// or an Azure blob URL, or a "
                        "local path")
                continue  # a local file or directory: synced by the runtime
            uses.append(_read_use(str(target), source, "COPY", None))
        else:
            uses.append(_mapping_use(str(target), source, cloud, s3_configured))
    for use in uses:
        check_target(use.target)
    return uses


def _read_use(target: str, url: str, mode: Mode, named_store: str | None) -> BucketUse:
    found = store_of_url(url)
    if found is None:
        raise StorageError(f"file_mounts.{target}.source: {url!r} is not a bucket URL",
                           hint="use s3://, gs://, r2:// or an Azure blob URL")
    if named_store is not None and named_store != found.name:
        raise StorageError(
            f"file_mounts.{target}.store: {named_store} does not match the source "
            f"{url!r}, which is in {found.name}", hint="drop store: or fix the source")
    location = found.parse_url(url)
    found.check_name(location.bucket, f"file_mounts.{target}.source")
    return BucketUse(target=target, store=found.name, bucket=location.bucket,
                     path=location.path, account=location.account, mode=mode,
                     created=False)


def _mapping_use(target: str, mount: Any, cloud: str | None,
                 s3_configured: bool) -> BucketUse:
    sources = list(mount.source or [])
    urls = [s for s in sources if store_of_url(s) is not None or "://" in s]
    where = f"file_mounts.{target}"
    if urls:
        if len(sources) > 1:
            raise StorageError(f"{where}.source: a bucket source is one URL, not a list",
                               hint="mount each bucket at a path of its own")
        if mount.name is not None:
            raise StorageError(
                f"{where}: name and a bucket source are both given; name is for a bucket "
                "skyc creates, a source URL is a bucket that already exists",
                hint=f"drop name: to read {urls[0]}, or drop the URL to create {mount.name}")
        return _read_use(target, urls[0], mount.mode, mount.store)
    if mount.name is None:
        raise StorageError(f"{where}: local sources need a bucket name to upload them to",
                           hint="add name: BUCKET (skyc creates the bucket)")
    chosen = _created_store(where, mount.store, cloud, s3_configured)
    if chosen is None:  # not placed yet: the name is checked against every store later
        return BucketUse(target=target, store=mount.store or "s3", bucket=mount.name,
                         mode=mount.mode, created=True, persistent=mount.persistent,
                         uploads=tuple(sources))
    chosen.check_name(mount.name, f"{where}.name")
    return BucketUse(target=target, store=chosen.name, bucket=mount.name,
                     account=created_account(chosen.name, mount.name), mode=mount.mode,
                     created=True, persistent=mount.persistent, uploads=tuple(sources))


def created_account(store_name: str, bucket: str) -> str:
    """The account that holds a bucket skyc creates in ``store_name`` ("" for stores
    without accounts), as the target that creates it names it."""
    found = store_target(store_name)
    part = found.storage() if found is not None else None
    return part.account(bucket) if part is not None else ""


def _created_store(where: str, named: str | None, cloud: str | None,
                   s3_configured: bool) -> Store | None:
    """The store a created bucket goes to: the one named, else the cloud's own; off the
    clouds, S3 when it is set up."""
    if named is not None:
        return store(named)
    if cloud is None:
        return None
    native = native_store(cloud)
    if native is not None:
        return native
    if s3_configured:
        return store("s3")
    raise StorageError(
        f"{where}.store: the task runs on {cloud}, which has no store of its own, and "
        "no AWS credentials or aws.endpoint_url are set up",
        hint="add store: s3 (or gcs, azure, r2) and the credentials for it")
