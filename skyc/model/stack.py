"""The Stack: one cluster's infrastructure, as engine-neutral data.

Values are data, never engine syntax: :class:`Ref` (another resource's
attribute), :class:`Var` (an input variable), :class:`Block` (a nested block
with the typed argument class an engine may need for it), and plain JSON. A
resource names its type for each schema family that can take it; dependencies,
ignored changes, provider settings and the state backend are fields of their
own. Nodes are unrolled (``node_0``, ``node_1``, ...): every node is one
resource. The emitters in :mod:`skyc.stacks` turn a stack into an engine's files.

A schema family is the vocabulary of resource types an engine reads: ``terraform``
(Terraform's providers, which OpenTofu reads too) or ``pulumi`` (the Pulumi SDKs'
classes). Each engine declares its family (``SCHEMA_FAMILY``, see
:mod:`skyc.stacks.registry`), so engines of one family share the types written here.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from skyc.errors import EngineError


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Ref(_Model):
    """Resource ``resource``'s attribute ``attribute`` (a dotted path, e.g. ``output.dir``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["ref"] = "ref"
    resource: str
    attribute: str


class Var(_Model):
    """The stack's input variable ``name`` (declared in ``Stack.variables``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["var"] = "var"
    name: str


class Block(_Model):
    """A nested block. ``args`` names, per schema family, the typed class it is built
    with (e.g. ``{"pulumi": "aws.ec2.InstanceRootBlockDeviceArgs"}``); families not
    named take it as a plain mapping."""

    kind: Literal["block"] = "block"
    values: dict[str, Any]
    args: dict[str, str] = Field(default_factory=dict)


Value = Any  # JSON, Ref, Var, Block, or lists/dicts of them


class LocalCommand(_Model):
    """A command run on the machine that applies the stack (in the stack's workspace)."""

    command: str
    when: Literal["create", "destroy"] = "create"
    environment: dict[str, str] = Field(default_factory=dict)


class Resource(_Model):
    """One resource.

    ``key`` identifies it within the stack (references and ``depends_on`` use it);
    ``name`` is the engine-facing name (defaults to ``key``); ``types`` maps each
    schema family that can create it to its type there (terraform ``aws_instance``,
    pulumi ``aws.ec2.Instance``). ``arg_names`` renames arguments for one family where
    its SDK spells them differently.
    """

    key: str
    name: str = ""
    types: dict[str, str]
    properties: dict[str, Any] = Field(default_factory=dict)
    depends_on: list[str] = Field(default_factory=list)
    ignore_changes: list[str] = Field(default_factory=list)
    provider: str | None = None
    commands: list[LocalCommand] = Field(default_factory=list)
    arg_names: dict[str, dict[str, str]] = Field(default_factory=dict)
    # Where the state of a family's engine may still hold it under an earlier address
    # (e.g. a node from before nodes were unrolled): the engine moves it instead of
    # replacing it.
    formerly: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _default_name(self) -> Resource:
        if not self.name:
            self.name = self.key
        return self

    def type_for(self, family: str) -> str:
        """The resource's type in the schema family ``family``."""
        try:
            return self.types[family]
        except KeyError:
            raise EngineError(
                f"resource {self.key} has no {family} type (it has: "
                f"{', '.join(sorted(self.types)) or 'none'})"
            ) from None


class Provider(_Model):
    """One provider's settings. ``types`` per schema family (terraform ``aws``, pulumi
    ``aws.Provider``); ``source`` and ``version`` pin the plugin."""

    types: dict[str, str]
    settings: dict[str, Any] = Field(default_factory=dict)
    source: str | None = None
    version: str | None = None


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
    providers: dict[str, Provider] = Field(default_factory=dict)
    variables: dict[str, Variable] = Field(default_factory=dict)
    backend: dict[str, dict[str, Any]] | None = None  # {"s3": {...}}; None = local state
    labels: dict[str, str] = Field(default_factory=dict)

    def add(self, resource: Resource) -> Resource:
        if any(r.key == resource.key for r in self.resources):
            raise EngineError(f"stack {self.name}: duplicate resource {resource.key}")
        self.resources.append(resource)
        return resource

    def resource(self, key: str) -> Resource:
        for res in self.resources:
            if res.key == key:
                return res
        raise KeyError(key)

    def families(self) -> list[str]:
        """The schema families that can take every resource of the stack."""
        names: set[str] | None = None
        for res in self.resources:
            names = set(res.types) if names is None else names & set(res.types)
        return sorted(names or ())


def references(value: Value) -> list[str]:
    """Keys of the resources a value refers to, in order of appearance."""
    found: list[str] = []
    if isinstance(value, Ref):
        found.append(value.resource)
    elif isinstance(value, Block):
        found += references(value.values)
    elif isinstance(value, dict):
        for item in value.values():
            found += references(item)
    elif isinstance(value, list | tuple):
        for item in value:
            found += references(item)
    return found


def check_references(stack: Stack) -> None:
    """Every Ref, depends_on and Var names something the stack has."""
    keys = {r.key for r in stack.resources}
    for res in stack.resources:
        for target in [*references(res.properties), *res.depends_on]:
            if target not in keys:
                raise EngineError(f"stack {stack.name}: {res.key} refers to unknown {target}")
    for name, out in stack.outputs.items():
        for target in references(out.value):
            if target not in keys:
                raise EngineError(f"stack {stack.name}: output {name} refers to unknown {target}")
