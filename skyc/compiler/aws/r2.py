"""R2 buckets through the AWS provider. R2 is no cloud's own store, and its S3 API is
what the AWS provider speaks: the stack of an R2 bucket skyc creates is one
``aws_s3_bucket`` through a provider pointed at the account's R2 endpoint, with the
checks R2 does not answer (STS, IMDS, the region list) skipped, as Cloudflare documents
for Terraform. R2 takes no bucket tags (owner, cluster and persistence are in skyc's
state), keeps buckets private unless made public and encrypts every object at rest.

The engine gets R2's keys as its AWS keys in its process environment only
(:mod:`skyc.storage.r2_engine`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from skyc.errors import StorageError
from skyc.model.stack import Block, Output, Provider, Ref, Resource, Stack
from skyc.settings.config import SkycConfig

STORE = "r2"
_SKIPS = ("skip_credentials_validation", "skip_region_validation",
          "skip_requesting_account_id", "skip_metadata_api_check")


def endpoint(config: SkycConfig, home: Path) -> str:
    """R2's S3 endpoint (``r2.endpoint_url``, else the account's), or StorageError."""
    found = config.r2.endpoint(home)
    if found is None:
        raise StorageError(
            "store: r2: R2's endpoint is not known: no ~/.cloudflare/accountid and no "
            "r2.endpoint_url in the config",
            hint="write your Cloudflare account id to ~/.cloudflare/accountid")
    return found


def bucket_stack(use: Any, labels: dict[str, str], config: SkycConfig,
                 home: Path | None = None) -> Stack:
    from skyc.compiler.aws.lowering import PROVIDER_VERSION

    settings: dict[str, Any] = {
        "region": "us-east-1",  # the provider signs for an AWS region name; R2 takes it
        "endpoints": [Block(values={"s3": endpoint(config, home or Path.home())},
                            args={"pulumi": "aws.ProviderEndpointArgs"})],
        "s3_use_path_style": True, **dict.fromkeys(_SKIPS, True)}
    stack = Stack(name=f"storage-{use.bucket}", cloud="aws", region="auto", labels=labels,
                  providers={"aws": Provider(types={"terraform": "aws",
                                                    "pulumi": "aws.Provider"},
                                             settings=settings, source="hashicorp/aws",
                                             version=PROVIDER_VERSION)})
    stack.add(Resource(key="bucket", types={"terraform": "aws_s3_bucket",
                                            "pulumi": "aws.s3.Bucket"}, provider="aws",
                       properties={"bucket": use.bucket, "force_destroy": True}))
    stack.outputs["bucket"] = Output(value=Ref(resource="bucket", attribute="id"),
                                     description="the bucket's name")
    return stack
