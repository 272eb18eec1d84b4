"""Emit a Stack as a Pulumi Python program: ``__main__.py`` and ``Pulumi.yaml``.

The program reads like hand-written code: one variable per resource, nested
blocks as the provider SDK's typed ``*Args`` classes (so a misspelt nested key
fails in Python instead of vanishing), references as attribute access
(``vpc.id``), inputs from the stack's config, outputs through ``pulumi.export``.
Pure and deterministic: the same stack always gives the same bytes. Nothing
here imports pulumi. It writes the ``pulumi`` schema family's types
(:data:`SCHEMA_FAMILY`): the SDKs' class paths.
"""

from __future__ import annotations

import json
import keyword
from typing import Any

from skyc.errors import EngineError, UnsupportedFeature
from skyc.model.stack import Block, Ref, Resource, Stack, Var, check_references

SCHEMA_FAMILY = "pulumi"
PROGRAM_FILE = "__main__.py"
PROJECT_FILE = "Pulumi.yaml"
PROJECT = "skyc"
_RESERVED = {"pulumi", "config"}
_INDENT = "    "


def package_of(class_path: str) -> tuple[str, str]:
    """(module alias, Python package) of an SDK class path: ``aws.ec2.Vpc`` ->
    (``aws``, ``pulumi_aws``)."""
    alias = class_path.split(".", 1)[0]
    return alias, f"pulumi_{alias}"


def _identifier(key: str) -> str:
    if not key.isidentifier():
        raise EngineError(f"resource key {key!r} is not a Python identifier")
    if keyword.iskeyword(key) or key in _RESERVED:
        return key + "_"
    return key


def _provider_var(name: str) -> str:
    return f"{name}_provider"


class _Writer:
    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.names = {r.key: _identifier(r.key) for r in stack.resources}
        self.aliases: set[str] = set()

    def value(self, value: Any, depth: int) -> str:
        if isinstance(value, Ref):
            return f"{self.names[value.resource]}.{value.attribute}"
        if isinstance(value, Var):
            return _identifier(value.name)
        if isinstance(value, Block):
            if SCHEMA_FAMILY not in value.args:
                return self.value(value.values, depth)
            return self.call(value.args[SCHEMA_FAMILY], [], value.values, depth)
        if isinstance(value, dict):
            return self._dict(value, depth)
        if isinstance(value, list | tuple):
            return self._list(value, depth)
        if value is None or isinstance(value, bool):
            return repr(value)
        if isinstance(value, int | float):
            return repr(value)
        if isinstance(value, str):
            return json.dumps(value)
        raise EngineError(f"stack {self.stack.name}: cannot write {type(value).__name__} "
                          "into a Pulumi program")

    def _dict(self, value: dict[Any, Any], depth: int) -> str:
        if not value:
            return "{}"
        pad = _INDENT * (depth + 1)
        items = [f"{pad}{json.dumps(str(k))}: {self.value(v, depth + 1)}," for k, v in
                 sorted(value.items())]
        return "{\n" + "\n".join(items) + "\n" + _INDENT * depth + "}"

    def _list(self, value: list[Any] | tuple[Any, ...], depth: int) -> str:
        if not value:
            return "[]"
        parts = [self.value(v, depth + 1) for v in value]
        if all("\n" not in p for p in parts) and sum(len(p) for p in parts) < 60:
            return "[" + ", ".join(parts) + "]"
        pad = _INDENT * (depth + 1)
        return "[\n" + "\n".join(f"{pad}{p}," for p in parts) + "\n" + _INDENT * depth + "]"

    def call(self, class_path: str, positional: list[str], kwargs: dict[str, Any],
             depth: int, extra: list[str] | None = None) -> str:
        alias, _ = package_of(class_path)
        self.aliases.add(alias)
        pad = _INDENT * (depth + 1)
        lines = [f"{pad}{p}," for p in positional]
        lines += [f"{pad}{k}={self.value(v, depth + 1)}," for k, v in sorted(kwargs.items())]
        lines += [f"{pad}{e}," for e in extra or []]
        if not lines:
            return f"{class_path}()"
        return f"{class_path}(\n" + "\n".join(lines) + "\n" + _INDENT * depth + ")"

    def options(self, res: Resource) -> str | None:
        opts = []
        if res.provider:
            if res.provider not in self.stack.providers:
                raise EngineError(f"resource {res.key}: no provider {res.provider} in the stack")
            opts.append(f"provider={_provider_var(res.provider)}")
        if res.depends_on:
            opts.append("depends_on=[" + ", ".join(self.names[k] for k in res.depends_on) + "]")
        if res.ignore_changes:
            opts.append("ignore_changes=" + json.dumps(sorted(res.ignore_changes)))
        if not opts:
            return None
        return "opts=pulumi.ResourceOptions(" + ", ".join(opts) + ")"

    def resource(self, res: Resource) -> str:
        if res.commands:
            raise UnsupportedFeature(f"resource {res.key}: local commands need terraform")
        renames = res.arg_names.get(SCHEMA_FAMILY, {})
        kwargs = {renames.get(k, k): v for k, v in res.properties.items()}
        opts = self.options(res)
        body = self.call(res.type_for(SCHEMA_FAMILY), [json.dumps(res.key)], kwargs, 0,
                         [opts] if opts else None)
        return f"{self.names[res.key]} = {body}"


def program(stack: Stack) -> str:
    """The ``__main__.py`` text for the stack."""
    check_references(stack)
    writer = _Writer(stack)
    sections: list[str] = []
    if stack.variables:
        lines = ["config = pulumi.Config()"]
        for name, var in sorted(stack.variables.items()):
            getter = "require_secret" if var.sensitive else "require"
            if var.default is not None:
                getter = "get_secret" if var.sensitive else "get"
            call = f"config.{getter}({json.dumps(name)})"
            if var.default is not None:
                call += f" or {writer.value(var.default, 0)}"
            lines.append(f"{_identifier(name)} = {call}")
        sections.append("\n".join(lines))
    for name, provider in sorted(stack.providers.items()):
        if SCHEMA_FAMILY not in provider.types:
            continue
        body = writer.call(provider.types[SCHEMA_FAMILY], [json.dumps(name)], provider.settings, 0)
        sections.append(f"{_provider_var(name)} = {body}")
    for res in stack.resources:
        sections.append(writer.resource(res))
    exports = []
    for name, out in sorted(stack.outputs.items()):
        value = writer.value(out.value, 0)
        if out.sensitive:
            value = f"pulumi.Output.secret({value})"
        exports.append(f"pulumi.export({json.dumps(name)}, {value})")
    if exports:
        sections.append("\n".join(exports))
    imports = ["import pulumi"] + [
        f"import {package_of(a)[1]} as {a}" for a in sorted(writer.aliases)
    ]
    header = (f'"""Cluster {stack.name} ({stack.cloud}'
              f'{"/" + stack.region if stack.region else ""}): its skyc stack as a Pulumi '
              'program."""')
    return "\n\n".join([header, "\n".join(imports), *sections]) + "\n"


def project(stack: Stack) -> str:
    """The ``Pulumi.yaml`` text: the project, run by the Python runtime."""
    description = json.dumps(f"skyc cluster {stack.name}")
    return f"name: {PROJECT}\nruntime: python\ndescription: {description}\n"


def files(stack: Stack) -> dict[str, str]:
    return {PROGRAM_FILE: program(stack), PROJECT_FILE: project(stack)}
