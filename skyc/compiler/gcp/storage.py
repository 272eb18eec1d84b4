"""GCS, the store GCP's nodes reach natively: the stack of a bucket skyc creates
(uniform bucket-level access, public access prevented, labelled), and the bindings that
let a cluster's service account reach the buckets its task mounts."""

from __future__ import annotations

from typing import Any

from skyc.compiler.gcp.names import labels as gcp_labels
from skyc.compiler.gcp.resources import resource
from skyc.model.stack import Output, Ref, Stack
from skyc.settings.config import SkycConfig

STORE = "gcs"
DEFAULT_REGION = "us-central1"
ALSO_CREATES: tuple[str, ...] = ()
READER, WRITER = "roles/storage.objectViewer", "roles/storage.objectAdmin"


def account(bucket: str) -> str:
    return ""  # buckets are not held in accounts


def bucket_stack(use: Any, region: str, labels: dict[str, str], config: SkycConfig) -> Stack:
    from skyc.compiler.gcp.lowering import provider

    stack = Stack(name=f"storage-{use.bucket}", cloud="gcp", region=region, labels=labels,
                  providers={"gcp": provider(region, None, config)})
    stack.add(resource("bucket", "bucket", {
        "name": use.bucket, "location": region.upper(), "force_destroy": True,
        "uniform_bucket_level_access": True, "public_access_prevention": "enforced",
        "labels": gcp_labels(labels)}))
    stack.outputs["bucket"] = Output(value=Ref(resource="bucket", attribute="name"))
    return stack


def add_bucket_bindings(stack: Stack, grants: list[tuple[str, bool]], account: str) -> None:
    """The cluster's service account (resource ``account``) on each bucket its task
    mounts, given as (bucket, written to): object viewer, or object admin where the
    nodes write. Nothing on the project, nothing on other buckets."""
    for i, (bucket, write) in enumerate(sorted(grants)):
        stack.add(resource("bucket_iam_member", f"bucket_access_{i}", {
            "bucket": bucket, "role": WRITER if write else READER,
            "member": Ref(resource=account, attribute="member")}))
