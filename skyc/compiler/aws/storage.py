"""S3, the store AWS's nodes reach natively: the stack of a bucket skyc creates (the
bucket, public access blocked, objects encrypted at rest, tagged). R2 buckets are made
through the same provider (:mod:`skyc.compiler.aws.r2`)."""

from __future__ import annotations

from typing import Any

from skyc.model.stack import Block, Output, Ref, Resource, Stack
from skyc.settings.config import SkycConfig

STORE = "s3"
DEFAULT_REGION = "us-east-1"
ALSO_CREATES: tuple[str, ...] = ("r2",)


def account(bucket: str) -> str:
    return ""  # buckets are not held in accounts


def bucket_stack(use: Any, region: str, labels: dict[str, str], config: SkycConfig) -> Stack:
    from skyc.compiler.aws.lowering import provider

    if use.store == "r2":
        from skyc.compiler.aws import r2

        return r2.bucket_stack(use, labels, config)

    stack = Stack(name=f"storage-{use.bucket}", cloud="aws", region=region, labels=labels,
                  providers={"aws": provider(region, config, services=("s3", "sts"))})
    stack.add(Resource(key="bucket", types={"terraform": "aws_s3_bucket",
                                            "pulumi": "aws.s3.Bucket"}, provider="aws",
                       properties={"bucket": use.bucket, "force_destroy": True,
                                   "tags": dict(labels)}))
    bucket = Ref(resource="bucket", attribute="id")
    stack.add(Resource(
        key="public_access",
        types={"terraform": "aws_s3_bucket_public_access_block",
               "pulumi": "aws.s3.BucketPublicAccessBlock"}, provider="aws",
        properties={"bucket": bucket, "block_public_acls": True, "block_public_policy": True,
                    "ignore_public_acls": True, "restrict_public_buckets": True}))
    default = Block(values={"sse_algorithm": "AES256"}, args={
        "pulumi": "aws.s3.BucketServerSideEncryptionConfigurationRule"
                  "ApplyServerSideEncryptionByDefaultArgs"})
    stack.add(Resource(
        key="encryption",
        types={"terraform": "aws_s3_bucket_server_side_encryption_configuration",
               "pulumi": "aws.s3.BucketServerSideEncryptionConfiguration"}, provider="aws",
        properties={"bucket": bucket, "rule": [Block(
            values={"apply_server_side_encryption_by_default": default},
            args={"pulumi": "aws.s3.BucketServerSideEncryptionConfigurationRuleArgs"})]},
        arg_names={"pulumi": {"rule": "rules"}}))
    stack.outputs["bucket"] = Output(value=bucket, description="the bucket's name")
    stack.outputs["arn"] = Output(value=Ref(resource="bucket", attribute="arn"))
    return stack
