"""Which buckets a task's nodes reach, as the task says it (``file_mounts``): each
bucket's store and name and whether the nodes write to it. A target grants its nodes
exactly these (an IAM policy, a bucket binding); skyc.storage holds each store's full
rules (names, paths, mount settings)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from skyc.task.candidate import BucketGrant

_SCHEMES = {"s3://": "s3", "gs://": "gcs", "gcs://": "gcs", "r2://": "r2"}
_AZURE = re.compile(r"^https://[a-z0-9]+\.blob\.core\.windows\.net/([^/]+)", re.IGNORECASE)


def local_source(source: Any) -> str | None:
    """A ``file_mounts`` source's local path (the runtime syncs it); None for a bucket
    (a mapping, or any URL)."""
    return source if isinstance(source, str) and "://" not in source else None


def bucket_of_url(url: str) -> tuple[str, str] | None:
    """(store, bucket) of a bucket URL; None for what is not one."""
    return _from_url(url)


def _from_url(url: str) -> tuple[str, str] | None:
    """(store, bucket) of a bucket URL; None for what is not one."""
    for scheme, store in _SCHEMES.items():
        if url.lower().startswith(scheme):
            bucket = url[len(scheme):].split("/", 1)[0]
            return (store, bucket) if bucket else None
    match = _AZURE.match(url)
    return ("azure", match.group(1)) if match else None


def bucket_grants(file_mounts: Mapping[str, Any]) -> tuple[BucketGrant, ...]:
    """The buckets of ``file_mounts``, one grant each (written to when any mount of it
    writes: every mode but COPY), sorted by store and name."""
    found: dict[tuple[str | None, str], tuple[bool, bool]] = {}
    for source in file_mounts.values():
        if isinstance(source, str):
            where, write, parsed = _from_url(source), False, None
            store: str | None = where[0] if where else None
            name = where[1] if where else None
        else:
            urls = [s for s in source.source or [] if _from_url(s)]
            parsed = _from_url(urls[0]) if urls else None
            store = parsed[0] if parsed else source.store
            name = parsed[1] if parsed else source.name
            write = source.mode != "COPY"
        if name is None or (isinstance(source, str) and store is None):
            continue
        created = not isinstance(source, str) and parsed is None  # named, no URL
        before = found.get((store, name), (False, False))
        found[(store, name)] = (before[0] or write, before[1] or created)
    return tuple(BucketGrant(store=s, bucket=b, write=w, created=c)
                 for (s, b), (w, c) in sorted(found.items(),
                                              key=lambda kv: (kv[0][0] or "", kv[0][1])))
