"""GCS, the store GCP's nodes reach natively: the stack of a bucket skyc creates (uniform
bucket-level access, public access prevented, labelled)."""

from __future__ import annotations

from typing import Any

from skyc.compiler.gcp.lowering import provider
from skyc.compiler.gcp.names import labels as gcp_labels
from skyc.model.stack import Output, Ref, Resource, Stack
from skyc.settings.config import SkycConfig

STORE = "gcs"


def bucket_stack(use: Any, region: str, labels: dict[str, str], config: SkycConfig) -> Stack:
    stack = Stack(name=f"storage-{use.bucket}", cloud="gcp", region=region, labels=labels,
                  providers={"google": provider(region, None, config)})
    stack.add(Resource(key="bucket", types={"terraform": "google_storage_bucket",
                                            "pulumi": "gcp.storage.Bucket"},
                       properties={"name": use.bucket, "location": region.upper(),
                                   "force_destroy": True,
                                   "uniform_bucket_level_access": True,
                                   "public_access_prevention": "enforced",
                                   "labels": gcp_labels(labels)}))
    stack.outputs["bucket"] = Output(value=Ref(resource="bucket", attribute="name"))
    return stack
