"""The Stack: one cluster's infrastructure, as data.

A stack is engine-neutral: resources with properties (plain JSON values, where
references to other resources are written in Terraform's interpolation syntax,
see :func:`ref`), outputs, provider settings and input variables. The emitter in
:mod:`skyc.stacks.terraform_json` turns it into ``main.tf.json``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Resource(_Model):
    """One resource: ``type`` (e.g. ``aws_instance``), a stack-unique ``name``.

    ``properties`` are the resource's arguments and nested blocks, including
    meta-arguments other than dependencies (``count``, ``lifecycle``,
    ``provisioner``). ``dependencies`` are explicit ``type.name`` addresses.
    """

    type: str
    name: str
    properties: dict[str, Any] = Field(default_factory=dict)
    dependencies: list[str] = Field(default_factory=list)

    @property
    def address(self) -> str:
        return f"{self.type}.{self.name}"


class Output(_Model):
    value: Any
    description: str = ""
    sensitive: bool = False


class Variable(_Model):
    """An input variable. Its value is supplied next to the stack, never inside it."""

    type: str = "string"
    description: str = ""
    default: Any = None
    sensitive: bool = False


class Stack(_Model):
    """One cluster's stack."""

    name: str                                   # the cluster name
    cloud: str
    region: str | None = None
    resources: list[Resource] = Field(default_factory=list)
    outputs: dict[str, Output] = Field(default_factory=dict)
    providers: dict[str, dict[str, Any]] = Field(default_factory=dict)
    required_providers: dict[str, dict[str, str]] = Field(default_factory=dict)
    variables: dict[str, Variable] = Field(default_factory=dict)
    backend: dict[str, dict[str, Any]] | None = None  # {"s3": {...}}; None = local state
    labels: dict[str, str] = Field(default_factory=dict)

    def add(self, resource: Resource) -> Resource:
        self.resources.append(resource)
        return resource

    def resource(self, address: str) -> Resource:
        for res in self.resources:
            if res.address == address:
                return res
        raise KeyError(address)


def ref(address: str, attribute: str) -> str:
    """A reference to another resource's attribute: ``${aws_vpc.main.id}``."""
    return "${" + f"{address}.{attribute}" + "}"
