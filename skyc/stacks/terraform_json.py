"""Emit a Stack as Terraform JSON syntax (``main.tf.json``).

The only place that writes Terraform's syntax: ``${...}`` references, the
``lifecycle`` and ``depends_on`` meta-arguments, ``local-exec`` provisioners,
``moved`` blocks and the ``terraform`` block. The output is deterministic: keys sorted, resources
keyed by type and name, a trailing newline. The same stack always gives the same
bytes.

It writes the ``terraform`` schema family's types (:data:`SCHEMA_FAMILY`), the ones
every Terraform-compatible engine reads, OpenTofu's included.
"""

from __future__ import annotations

import json
from typing import Any

from skyc.errors import EngineError
from skyc.model.stack import (
    Block,
    LocalCommand,
    Provider,
    Ref,
    Resource,
    Stack,
    Var,
    check_references,
)

SCHEMA_FAMILY = "terraform"
STACK_FILE = "main.tf.json"
VARS_FILE = "terraform.tfvars.json"


def literal(text: str) -> str:
    """``text`` as a Terraform string template that evaluates to ``text`` itself.

    In Terraform's JSON syntax every string of an expression is a template, object keys
    included: ``${...}`` interpolates and ``%{...}`` is a directive, so a label key such as
    ``${file("/proc/self/environ")}`` would be evaluated. ``$${`` and ``%%{`` are their
    escapes. Every key and every string value skyc writes into an expression goes
    through here; only the references skyc itself writes (:class:`Ref`, :class:`Var`) are
    templates. (A variable's ``default`` and the ``backend`` block are not expressions:
    Terraform reads them literally, so they are written as they are.)
    """
    return text.replace("${", "$${").replace("%{", "%%{")


def address(resource: Resource) -> str:
    """The resource's terraform address, e.g. ``aws_instance.node_0``."""
    return f"{resource.type_for(SCHEMA_FAMILY)}.{resource.name}"


class _Renderer:
    def __init__(self, stack: Stack) -> None:
        self.addresses = {r.key: address(r) for r in stack.resources}

    def value(self, value: Any) -> Any:
        if isinstance(value, Ref):
            return "${" + f"{self.addresses[value.resource]}.{value.attribute}" + "}"
        if isinstance(value, Var):
            return "${var." + value.name + "}"
        if isinstance(value, Block):
            return self.value(value.values)
        if isinstance(value, dict):
            return {literal(str(k)): self.value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(v) for v in value]
        if isinstance(value, str):
            return literal(value)
        return value

    def command(self, command: LocalCommand) -> dict[str, Any]:
        body: dict[str, Any] = {"command": literal(command.command)}
        if command.environment:
            body["environment"] = self.value(dict(command.environment))
        if command.when == "destroy":
            body["when"] = "destroy"
        return {"local-exec": body}

    def resource(self, res: Resource) -> dict[str, Any]:
        renames = res.arg_names.get(SCHEMA_FAMILY, {})
        body: dict[str, Any] = {
            literal(renames.get(k, k)): self.value(v) for k, v in res.properties.items()
        }
        if res.depends_on:
            body["depends_on"] = sorted(self.addresses[k] for k in res.depends_on)
        if res.ignore_changes:
            body["lifecycle"] = {"ignore_changes": sorted(res.ignore_changes)}
        if res.commands:
            body["provisioner"] = [self.command(c) for c in res.commands]
        return body


def to_terraform(stack: Stack) -> dict[str, Any]:
    """The stack as a Terraform JSON document (a plain dict)."""
    check_references(stack)
    render = _Renderer(stack)
    doc: dict[str, Any] = {}
    terraform: dict[str, Any] = {}
    required = {
        name: {"source": p.source, "version": p.version}
        for name, p in _providers(stack) if p.source and p.version
    }
    if required:
        terraform["required_providers"] = required
    if stack.backend:
        terraform["backend"] = stack_backend(stack.name, stack.backend)
    if terraform:
        doc["terraform"] = terraform
    if stack.providers:
        doc["provider"] = {name: render.value(p.settings) for name, p in _providers(stack)}
    if stack.variables:
        doc["variable"] = {
            name: var.model_dump(exclude_defaults=True) | {"type": var.type}
            for name, var in stack.variables.items()
        }
    resources: dict[str, dict[str, Any]] = {}
    for res in stack.resources:
        by_type = resources.setdefault(res.type_for(SCHEMA_FAMILY), {})
        if res.name in by_type:
            raise EngineError(f"stack {stack.name}: duplicate resource {address(res)}")
        by_type[res.name] = render.resource(res)
    if resources:
        doc["resource"] = resources
    moved = sorted(
        ({"from": r.formerly[SCHEMA_FAMILY], "to": address(r)} for r in stack.resources
         if SCHEMA_FAMILY in r.formerly),
        key=lambda m: m["to"],
    )
    if moved:
        doc["moved"] = moved
    if stack.outputs:
        doc["output"] = {
            name: out.model_dump(exclude_defaults=True) | {"value": render.value(out.value)}
            for name, out in stack.outputs.items()
        }
    return doc


def _providers(stack: Stack) -> list[tuple[str, Provider]]:
    """(terraform provider name, provider), sorted."""
    return sorted(((p.types.get(SCHEMA_FAMILY, name), p) for name, p in stack.providers.items()),
                  key=lambda item: item[0])


def dumps(doc: Any) -> str:
    """Deterministic JSON text: sorted keys, two-space indent, trailing newline."""
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def emit(stack: Stack) -> str:
    """``main.tf.json`` text for the stack."""
    return dumps(to_terraform(stack))


def files(stack: Stack) -> dict[str, str]:
    """The files the terraform engine reads: ``main.tf.json``."""
    return {STACK_FILE: emit(stack)}


# Where each backend kind keeps one stack's state apart from the others' (the config
# names the place for all of them: a bucket and a key or prefix under it).
_STATE_KEYS = {"s3": "key", "azurerm": "key", "gcs": "prefix"}


def stack_backend(name: str, backend: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The config's ``backend`` block for stack ``name``: every stack keeps its state
    under a key of its own, ``<key>/<name>.tfstate`` (gcs: ``<prefix>/<name>``), so two
    clusters never share one state (the config's key or prefix, default ``skyc``, is
    the folder of them all). Other kinds are written as the config gives them."""
    out: dict[str, Any] = {}
    for kind, settings in backend.items():
        block = dict(settings)
        field = _STATE_KEYS.get(kind)
        if field is not None:
            base = str(block.get(field) or "skyc").removesuffix(".tfstate").strip("/")
            block[field] = f"{base}/{name}" + (".tfstate" if field == "key" else "")
        out[kind] = block
    return out
