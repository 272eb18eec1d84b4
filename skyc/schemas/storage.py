"""The storage document: ``skyc storage ls --format json``, the buckets skyc created."""

from __future__ import annotations

from pydantic import Field

from skyc.schemas import versions
from skyc.schemas.base import Document


class Bucket(Document):
    name: str
    store: str = Field(description="s3, gcs, azure or r2")
    url: str = Field(description="e.g. s3://NAME")
    region: str | None
    status: str = Field(description="CREATING, READY, DELETING or FAILED")
    persistent: bool = Field(description="false: destroyed with the cluster it goes with")
    cluster: str | None = Field(description="the cluster it goes with (not persistent)")
    used_by: list[str] = Field(description="the clusters (still up) that mount it")
    owner: str | None
    created_at: float = Field(description="epoch seconds")


class StorageDocument(Document):
    format_version: versions.StorageVersion
    buckets: list[Bucket]


TITLE = (f"skyc storage document (skyc storage ls --format json), format_version "
         f"{versions.STORAGE}")
