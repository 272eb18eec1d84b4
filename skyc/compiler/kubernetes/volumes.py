"""The stack of a volume skyc creates on Kubernetes (``skyc volumes apply``): one
PersistentVolumeClaim, named as the volume, labelled with its owner."""

from __future__ import annotations

from typing import Any

from skyc.compiler.kubernetes import manifest
from skyc.compiler.kubernetes.lowering import PROVIDER, TYPES
from skyc.model.stack import Output, Provider, Ref, Resource, Stack


def volume_stack(volume: Any, context: str, namespace: str | None,
                 labels: dict[str, str]) -> Stack:
    """``volume``: a :class:`skyc.task.volume_file.VolumeFile`."""
    provider: dict[str, Any] = {"context": context}
    if namespace:
        provider["namespace"] = namespace
    stack = Stack(name=f"volume-{volume.name}", cloud="kubernetes", region=context,
                  labels=labels, providers={PROVIDER: Provider(
                      types={"pulumi": "kubernetes.Provider"}, settings=provider)})
    metadata: dict[str, Any] = {"name": volume.name, "labels": manifest.labels(
        {**volume.labels, **labels})}
    if namespace:
        metadata["namespace"] = namespace
    spec: dict[str, Any] = {"accessModes": [volume.config.access_mode],
                            "resources": {"requests": {"storage": volume.storage}}}
    if volume.config.storage_class_name:
        spec["storageClassName"] = volume.config.storage_class_name
    stack.add(Resource(key="volume", types={"pulumi": TYPES["volume"]}, provider=PROVIDER,
                       properties={"metadata": metadata, "spec": spec}))
    stack.outputs["name"] = Output(value=Ref(resource="volume", attribute="metadata.name"))
    return stack
