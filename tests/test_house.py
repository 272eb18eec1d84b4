"""The shape of the package: each stage a package named for what it does, a small top,
and one error tree."""

from __future__ import annotations

import ast
import inspect
import io
import re
import tokenize
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


_CLOUD_LITERAL = re.compile(r"""["'](aws|gcp|azure|kubernetes|k8s)["']""")
# Where a cloud's name may be written: its target folder, the target registry, the task
# format's own vocabulary. (Transport names and prose examples are not cloud keys.)
_CLOUD_HOMES = ("compiler/aws/", "compiler/gcp/", "compiler/azure/", "compiler/kubernetes/",
                "compiler/local/", "compiler/ssh/", "compiler/__init__.py", "task/")
_NOT_CLOUD_KEYS = {
    "model/nodes.py": "a node's transport",
    "runtime/transport.py": "a node's transport (the registry's built-in names)",
    "runtime/kube.py": "the kubernetes Python package's name",
    "storage/stores/__init__.py": "the stores' names (azure names a store, as in SkyPilot)",
    "storage/stores/azure.py": "the Azure Blob store's own name",
}


def _code_lines(path: Path) -> list[tuple[int, str]]:
    """The string literals of a module's code (docstrings left out)."""
    tree = ast.parse(path.read_text())
    doc_lines: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and isinstance(
                getattr(body[0], "value", None), ast.Constant):
            doc_lines.update(range(body[0].lineno, (body[0].end_lineno or body[0].lineno) + 1))
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
        if tok.type == tokenize.STRING and tok.start[0] not in doc_lines:
            out.append((tok.start[0], tok.string))
    return out


def test_no_cloud_is_named_outside_its_target_the_registry_and_the_task_format() -> None:
    root = SKYC
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(_CLOUD_HOMES) or rel in _NOT_CLOUD_KEYS:
            continue
        found += [f"{rel}:{line}: {text}" for line, text in _code_lines(path)
                  if _CLOUD_LITERAL.fullmatch(text)]
    assert found == [], "a cloud's facts belong in its target folder or catalog data:\n" + (
        "\n".join(found))


MAX_FUNCTION_LINES = 60


def test_no_function_is_longer_than_sixty_lines() -> None:
    """A function longer than a screen is several steps without their names."""
    long = []
    for path in sorted(SKYC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(SKYC)}:{node.lineno} {node.name}: {lines}")
    assert long == [], f"functions over {MAX_FUNCTION_LINES} lines:\n" + "\n".join(long)


# The stages, each importing only the ones before it. The task format comes first (it
# imports no other stage; the settings read their files through its bounded reader);
# the state is below the runtime and apply, which record what they do in it; review
# (plan files, policy) is below apply, which applies a reviewed plan.
_PIPELINE = ("task", "settings", "model", "catalog", "optimizer", "compiler", "storage",
             "stacks", "state", "runtime", "review", "schemas", "apply", "jobs", "serve", "cli")
# The config file holds each target's own section; the settings read those models from
# the target folders (light pydantic modules, see skyc/compiler/<target>/config.py).
_ALLOWED_LATER = {("settings", "skyc.compiler.azure.config"),
                  ("settings", "skyc.compiler.gcp.config"),
                  ("settings", "skyc.compiler.kubernetes.config")}


def test_no_stage_imports_a_later_one() -> None:
    """Every import follows the pipeline: at a module's top, inside a function, and
    for type checking alike, so no stage depends on a later one and the stages form no
    cycle."""
    rank = {name: i for i, name in enumerate(_PIPELINE)}
    found = []
    for path in sorted(SKYC.rglob("*.py")):
        parts = path.relative_to(SKYC).parts
        if len(parts) < 2 or parts[0] not in rank:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([node.module] if isinstance(node, ast.ImportFrom) and node.module
                     and node.level == 0 else
                     [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            for name in names:
                stage = name.split(".")[1] if name.startswith("skyc.") else None
                if (stage in rank and rank[stage] > rank[parts[0]]
                        and (parts[0], name) not in _ALLOWED_LATER):
                    found.append(f"{path.relative_to(SKYC)}:{node.lineno}: {name}")
    assert found == [], "\n".join(found)
