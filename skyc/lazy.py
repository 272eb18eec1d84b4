"""A package's names, each imported from its module on first use (PEP 562)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, modules: Mapping[str, str]) -> Callable[[str], Any]:
    """The ``__getattr__`` of ``package``: ``modules`` maps each exported name to the
    submodule that defines it (or to a whole module path, ``skyc.model.plan``); the
    value found is kept in the package's namespace, so each name is looked up once."""
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        module = modules.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        path = module if module.startswith("skyc.") else f"{package}.{module}"
        value = getattr(importlib.import_module(path), name)
        namespace[name] = value
        return value

    return __getattr__
