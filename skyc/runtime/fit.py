"""Does a task fit an existing cluster: its node count and its accelerators."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def _fits(request: Any, have: Mapping[str, float], gpus_per_node: float) -> bool:
    if request is None:
        return True
    count = float(getattr(request, "count", 1) or 0)
    name = getattr(request, "name", None)
    if not have:
        return name is None and 0 < count <= gpus_per_node
    if name is None:
        return any(count <= n for n in have.values())
    matches = [n for k, n in have.items() if k.lower() == str(name).lower()]
    return any(count <= n for n in matches)


def accelerator_problem(candidates: Sequence[Any], have: Mapping[str, float],
                        gpus_per_node: float = 0) -> str | None:
    """Why none of the task's resource candidates can run on a cluster whose nodes each
    have ``have`` (accelerator name -> count); None when one can."""
    if not candidates or any(_fits(getattr(c, "accelerator", None), have, gpus_per_node)
                             for c in candidates):
        return None
    asked = sorted({_describe(c.accelerator) for c in candidates if c.accelerator})
    there = ", ".join(f"{k}:{v:g}" for k, v in sorted(have.items())) or (
        f"{gpus_per_node:g} accelerator(s)" if gpus_per_node else "no accelerators")
    return f"the task asks for {' or '.join(asked)}, but each node of the cluster has {there}"


def _describe(request: Any) -> str:
    name = request.name or f"{request.min_memory_gib:g}GB+"
    return f"{name}:{request.count:g}"
