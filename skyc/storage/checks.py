"""Checks of a task's buckets from this machine, before anything is provisioned: a
bucket named as a source exists and can be read with the credentials the nodes get."""

from __future__ import annotations

from collections.abc import Mapping

from skyc.errors import StorageError
from skyc.storage import rclone
from skyc.storage.stores import store
from skyc.storage.uses import BucketUse

_MISSING = ("directory not found", "NoSuchBucket", "404", "bucket does not exist",
            "ContainerNotFound")
_DENIED = ("AccessDenied", "403", "Forbidden", "AuthorizationFailure", "InvalidAccessKeyId",
           "SignatureDoesNotMatch")


def bucket_state(use: BucketUse, settings: Mapping[str, str]) -> str:
    """``ok``, ``missing`` or ``denied``; StorageError when the store cannot be asked."""
    found = store(use.store)
    done = rclone.run(["lsf", "--max-depth", "1", f"{found.remote_name(use.location)}:"
                       f"{use.bucket}"], settings)
    if done.returncode == 0:
        return "ok"
    text = done.stderr
    if any(w in text for w in _DENIED):
        return "denied"
    if found.remote_per_account and "no such host" in text:
        return "missing"  # the account is a host of its own: no host, no account
    if done.returncode == 3 or any(w in text for w in _MISSING):
        return "missing"
    raise StorageError(f"{use.field}: cannot reach {use.url}: {rclone.reason(text)}",
                       hint="check the store's endpoint and your network")


def check_source(use: BucketUse, settings: Mapping[str, str]) -> None:
    """A bucket the task reads exists and is readable, or StorageError saying which."""
    state = bucket_state(use, settings)
    if state == "missing":
        raise StorageError(
            f"{use.field}.source: {use.url} does not exist",
            hint="check the name, or give name: instead to have skyc create the bucket")
    if state == "denied":
        raise StorageError(
            f"{use.field}.source: {use.url} is not readable with your credentials (access "
            "denied: the bucket may belong to another account)",
            hint="use credentials that can read it, or a bucket of your own")


def check_created(use: BucketUse, settings: Mapping[str, str], ours: bool) -> None:
    """A bucket skyc is to create: not taken by someone else (bucket names are global).
    ``ours``: the state records skyc created it (then it is used again)."""
    if ours:
        return
    state = bucket_state(use, settings)
    if state == "denied":
        raise StorageError(
            f"{use.field}.name: the bucket {use.bucket} exists and belongs to someone else",
            hint="choose another name")
    if state == "ok":
        raise StorageError(
            f"{use.field}.name: the bucket {use.bucket} exists but skyc did not create it",
            hint=f"to mount it as it is, write source: {use.url} instead of name:")
