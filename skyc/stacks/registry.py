"""The engine registry: engines load lazily by name.

Each engine module holds its own files and binary: ``open_engine(workspace)``
(an :class:`~skyc.stacks.engine.Engine`), ``files(stack) -> {name: text}`` (what
its emitter writes), ``write(stack, workspace, values)`` (those files plus the
input values, where the engine keeps them), ``unavailable()`` (why it cannot
plan here, or None), ``STACK_FILE`` (the file whose presence says a
workspace holds a stack) and ``SCHEMA_FAMILY``. Nothing outside this package names
them.

An engine's schema family (:func:`schema_family`) is the key under which a stack's
resources and providers name their types for it (``Resource.types``): the engine's
emitter looks types up by the family, not by the engine's name, so engines that
read one schema share its types. OpenTofu reads Terraform's: it is driven by the
terraform engine (which runs ``tofu`` when ``terraform`` is not installed, or the
binary ``$SKYC_TERRAFORM`` names) and shares its family, ``terraform``.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from skyc.errors import UnsupportedFeature
from skyc.model.workspace import ENGINE_FILE

if TYPE_CHECKING:  # finding a workspace's engine loads neither
    from skyc.model.stack import Stack
    from skyc.stacks.engine import Engine

ENGINES: dict[str, str] = {
    "terraform": "skyc.stacks.terraform",
    "pulumi": "skyc.stacks.pulumi_engine",
}
DEFAULT_ENGINE = "terraform"


class EngineModule(Protocol):
    NAME: str
    STACK_FILE: str
    SCHEMA_FAMILY: str

    def open_engine(self, workspace: Path, env: dict[str, str] | None = None) -> Engine: ...

    def files(self, stack: Stack) -> dict[str, str]: ...

    def write(self, stack: Stack, workspace: Path, values: dict[str, Any]) -> Path: ...

    def unavailable(self) -> str | None: ...

    def previews_offline(self) -> bool: ...


def engine_module(name: str) -> EngineModule:
    if name not in ENGINES:
        raise UnsupportedFeature(
            f"engine: no engine named {name!r} (known: {', '.join(sorted(ENGINES))})"
        )
    return cast(EngineModule, importlib.import_module(ENGINES[name]))


def schema_family(name: str) -> str:
    """The schema family whose resource types the engine ``name`` reads."""
    return engine_module(name).SCHEMA_FAMILY


def open_engine(name: str, workspace: Path, env: dict[str, str] | None = None) -> Engine:
    """The engine ``name`` driving the stack in ``workspace``; ``env``: variables its
    processes get besides this one's (credentials of the stack's own, never written)."""
    return engine_module(name).open_engine(Path(workspace), env)


def emit(stack: Stack, engine: str) -> dict[str, str]:
    """The engine's files for the stack, by name; pure and deterministic."""
    return engine_module(engine).files(stack)


def write_stack(
    stack: Stack, workspace: Path, values: dict[str, Any] | None = None,
    engine: str = DEFAULT_ENGINE,
) -> Path:
    """Write the stack for ``engine`` into the workspace; returns its main file."""
    workspace.mkdir(parents=True, exist_ok=True)
    path = engine_module(engine).write(stack, workspace, values or {})
    marker = workspace / ENGINE_FILE
    if not marker.exists() or marker.read_text().strip() != engine:
        marker.write_text(engine + "\n")
    return path


def stack_engine(workspace: Path) -> str | None:
    """The engine the workspace's stack was written for; None when it holds no stack."""
    marker = workspace / ENGINE_FILE
    if marker.exists():
        name = marker.read_text().strip()
        if name in ENGINES and (workspace / engine_module(name).STACK_FILE).exists():
            return name
    # A workspace written before the marker existed holds a terraform stack.
    if (workspace / engine_module(DEFAULT_ENGINE).STACK_FILE).exists():
        return DEFAULT_ENGINE
    return None


def engine_names() -> tuple[str, ...]:
    return tuple(ENGINES)
