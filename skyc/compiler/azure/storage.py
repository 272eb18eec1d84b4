"""Azure Blob Storage, the store Azure's nodes reach natively.

A container skyc creates has a storage account of its own, in a resource group of its
own (``skyc-storage-<container>``), both named from the container so the same task file
finds them again: the account (``skyc`` and 20 hex digits of the container name's
SHA-256, as account names are global and 3-24 lower-case letters and digits) is a
StorageV2, locally redundant, Hot account with no public blob access, HTTPS and TLS 1.2
only, blob encryption at rest; the container has no public access.

A cluster whose task mounts containers skyc created gets one user-assigned managed
identity, on each of its VMs, and one role assignment per container: Storage Blob Data
Reader, or Contributor where the nodes write. Nothing on the account, the resource
group or the subscription. A container skyc did not create is reached with the user's
own key (its resource group is not known, so no role can be scoped to it).
"""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

from skyc.model.stack import Output, Ref, Resource, Stack
from skyc.settings.config import SkycConfig

STORE = "azure"
DEFAULT_REGION = "eastus"
ALSO_CREATES: tuple[str, ...] = ()
# Azure's built-in roles (the same ids in every subscription).
READER = "2a2b9908-6ea1-4ae2-8e65-a410df84e7d1"  # Storage Blob Data Reader
WRITER = "ba92f5b4-2d11-453d-a403-e96b0029c9fe"  # Storage Blob Data Contributor
_NAMESPACE = uuid.UUID("6f1c0b53-4a43-4c1e-9d2a-0d7cf3f6a1e5")  # role assignment names

TYPES: dict[str, str] = {
    "resource_group": "azure_native.resources.ResourceGroup",
    "storage_account": "azure_native.storage.StorageAccount",
    "container": "azure_native.storage.BlobContainer",
    "identity": "azure_native.managedidentity.UserAssignedIdentity",
    "role_assignment": "azure_native.authorization.RoleAssignment",
}


def account(bucket: str) -> str:
    """The storage account of a container skyc creates."""
    return "skyc" + hashlib.sha256(bucket.encode()).hexdigest()[:20]


def resource_group(bucket: str) -> str:
    return f"skyc-storage-{bucket}"


def container_id(subscription: str, bucket: str) -> str:
    """The Azure resource id of a container skyc created (a role assignment's scope)."""
    return (f"/subscriptions/{subscription}/resourceGroups/{resource_group(bucket)}"
            f"/providers/Microsoft.Storage/storageAccounts/{account(bucket)}"
            f"/blobServices/default/containers/{bucket}")


def _resource(kind: str, key: str, properties: dict[str, Any], **fields: Any) -> Resource:
    return Resource(key=key, types={"pulumi": TYPES[kind]}, properties=properties,
                    provider="azure_native", **fields)


def bucket_stack(use: Any, region: str, labels: dict[str, str], config: SkycConfig) -> Stack:
    from skyc.compiler.azure.lowering import _args, provider

    bucket = use.bucket
    stack = Stack(name=f"storage-{bucket}", cloud="azure", region=region, labels=labels,
                  providers={"azure_native": provider(region, config)})
    group = Ref(resource="resource_group", attribute="name")
    stack.add(_resource("resource_group", "resource_group", {
        "resource_group_name": resource_group(bucket), "location": region,
        "tags": dict(labels)}))
    blob = _args("storage.EncryptionServiceArgs", enabled=True, key_type="Account")
    stack.add(_resource("storage_account", "storage_account", {
        "account_name": account(bucket), "resource_group_name": group, "location": region,
        "kind": "StorageV2", "sku": _args("storage.SkuArgs", name="Standard_LRS"),
        "access_tier": "Hot", "allow_blob_public_access": False,
        "enable_https_traffic_only": True, "minimum_tls_version": "TLS1_2",
        "encryption": _args("storage.EncryptionArgs", key_source="Microsoft.Storage",
                            services=_args("storage.EncryptionServicesArgs", blob=blob)),
        "tags": dict(labels)}))
    stack.add(_resource("container", "bucket", {
        "account_name": Ref(resource="storage_account", attribute="name"),
        "resource_group_name": group, "container_name": bucket, "public_access": "None",
        "metadata": {k.replace("-", "_"): v for k, v in sorted(labels.items())}}))
    stack.outputs["bucket"] = Output(value=Ref(resource="bucket", attribute="name"),
                                     description="the container's name")
    stack.outputs["account"] = Output(value=account(bucket),
                                      description="the storage account that holds it")
    stack.outputs["id"] = Output(value=Ref(resource="bucket", attribute="id"))
    return stack


def add_container_access(stack: Stack, grants: list[tuple[str, bool]], subscription: str,
                         identity: str, group: Ref, name: str, region: str,
                         tags: dict[str, str]) -> Ref:
    """The cluster's managed identity (resource ``identity``, named ``name``) and one
    role assignment per container in ``grants`` (container, written to). Returns the
    identity's id, for the VMs."""
    stack.add(_resource("identity", identity, {
        "resource_group_name": group, "resource_name": name, "location": region,
        "tags": tags}, arg_names={"pulumi": {"resource_name": "resource_name_"}}))
    principal = Ref(resource=identity, attribute="principal_id")
    for i, (bucket, write) in enumerate(sorted(grants)):
        role = WRITER if write else READER
        stack.add(_resource("role_assignment", f"container_access_{i}", {
            # a GUID Azure requires; the same for the same cluster, container and role
            "role_assignment_name": str(uuid.uuid5(_NAMESPACE, f"{name}/{bucket}/{role}")),
            "principal_id": principal, "principal_type": "ServicePrincipal",
            "role_definition_id": (f"/subscriptions/{subscription}/providers/"
                                   f"Microsoft.Authorization/roleDefinitions/{role}"),
            "scope": container_id(subscription, bucket)}))
    return Ref(resource=identity, attribute="id")
