"""The GCP resource kinds a stack is made of, by their Pulumi classes (``pulumi_gcp``).

Only the Pulumi engine takes GCP stacks: ``pulumi_gcp`` is bridged from the
Terraform google provider and keeps its argument names, but no google provider
can be run here to check Terraform JSON against, so no terraform type is named.
"""

from __future__ import annotations

from typing import Any

from skyc.model.stack import Block, Resource

ENGINE = "pulumi"
PROVIDER = "gcp"

TYPES: dict[str, str] = {
    "network": "gcp.compute.Network",
    "subnetwork": "gcp.compute.Subnetwork",
    "firewall": "gcp.compute.Firewall",
    "resource_policy": "gcp.compute.ResourcePolicy",
    "instance": "gcp.compute.Instance",
    "tpu_vm": "gcp.tpu.V2Vm",
    "service_account": "gcp.serviceaccount.Account",
    "bucket": "gcp.storage.Bucket",
    "bucket_iam_member": "gcp.storage.BucketIAMMember",
}


def resource(kind: str, key: str, properties: dict[str, Any], **fields: Any) -> Resource:
    return Resource(key=key, types={ENGINE: TYPES[kind]}, properties=properties,
                    provider=PROVIDER, **fields)


def block(args: str, **values: Any) -> Block:
    """A nested block built with the SDK's typed class ``gcp.<module>.<args>``."""
    return Block(values=values, args={ENGINE: f"gcp.{args}"})
