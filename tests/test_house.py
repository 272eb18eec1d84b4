"""The shape of the package: each stage a package named for what it does, a small top,
and one error tree."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import skyc.errors as errors

SKYC = Path(__file__).resolve().parents[1] / "skyc"
STAGES = ("settings", "model", "task", "catalog", "optimizer", "compiler", "stacks",
          "runtime", "apply", "state", "jobs", "review", "cli")


def test_the_top_of_skyc_holds_at_most_five_modules() -> None:
    top = sorted(p.name for p in SKYC.glob("*.py"))
    assert len(top) <= 5, top
    assert {"__init__.py", "__main__.py", "errors.py"} <= set(top)


def test_each_stage_is_a_package() -> None:
    for stage in STAGES:
        assert (SKYC / stage / "__init__.py").is_file(), stage


def _error_classes() -> set[str]:
    return {name for name, value in vars(errors).items()
            if inspect.isclass(value) and issubclass(value, errors.SkycError)}


def test_every_skyc_error_is_defined_in_the_error_tree() -> None:
    """A SkycError subclass defined anywhere else is missing from the tree drawn in
    errors.py's docstring (and from the one place a reader looks for them)."""
    names = _error_classes()
    outside = []
    for path in sorted(SKYC.rglob("*.py")):
        if path == SKYC / "errors.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.ClassDef):
                continue
            bases = {b.id if isinstance(b, ast.Name) else b.attr
                     for b in node.bases if isinstance(b, ast.Name | ast.Attribute)}
            if bases & names:
                outside.append(f"{path.relative_to(SKYC)}: {node.name}")
    assert outside == []
    drawn = errors.__doc__ or ""
    assert [n for n in sorted(names) if n not in drawn] == []
