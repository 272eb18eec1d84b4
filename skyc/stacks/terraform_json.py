"""Emit a Stack as Terraform JSON syntax (``main.tf.json``).

The output is deterministic: keys sorted, resources keyed by type and name, a
trailing newline. The same stack always gives the same bytes.
"""

from __future__ import annotations

import json
from typing import Any

from skyc.errors import EngineError
from skyc.stacks.model import Stack

STACK_FILE = "main.tf.json"
VARS_FILE = "terraform.tfvars.json"


def to_terraform(stack: Stack) -> dict[str, Any]:
    """The stack as a Terraform JSON document (a plain dict)."""
    doc: dict[str, Any] = {}
    terraform: dict[str, Any] = {}
    if stack.required_providers:
        terraform["required_providers"] = dict(stack.required_providers)
    if stack.backend:
        terraform["backend"] = dict(stack.backend)
    if terraform:
        doc["terraform"] = terraform
    if stack.providers:
        doc["provider"] = dict(stack.providers)
    if stack.variables:
        doc["variable"] = {
            name: var.model_dump(exclude_defaults=True) | {"type": var.type}
            for name, var in stack.variables.items()
        }
    resources: dict[str, dict[str, Any]] = {}
    for res in stack.resources:
        body = dict(res.properties)
        if res.dependencies:
            body["depends_on"] = sorted(res.dependencies)
        by_type = resources.setdefault(res.type, {})
        if res.name in by_type:
            raise EngineError(f"stack {stack.name}: duplicate resource {res.address}")
        by_type[res.name] = body
    if resources:
        doc["resource"] = resources
    if stack.outputs:
        doc["output"] = {
            name: out.model_dump(exclude_defaults=True) | {"value": out.value}
            for name, out in stack.outputs.items()
        }
    return doc


def dumps(doc: Any) -> str:
    """Deterministic JSON text: sorted keys, two-space indent, trailing newline."""
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def emit(stack: Stack) -> str:
    """``main.tf.json`` text for the stack."""
    return dumps(to_terraform(stack))
