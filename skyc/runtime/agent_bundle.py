"""The node agent's one shipped file, joined from its modules (skyc/runtime/node_agent/).

A node runs the agent with its own python3 and nothing of skyc installed, so what is
shipped is one self-contained file: the package's docstring, one import header (the
union of what the modules import at their top), then each module's code in the order
of :data:`PARTS`, without the imports between the modules. Joining refuses what would
not work once joined: a module importing at its top more than a Python started with
``-S`` has loaded, a name taken from a later module, a name two modules define, an
import of skyc inside a module's code.

``python -m skyc.runtime.agent_bundle`` writes the file (skyc/runtime/agent.py);
``--check`` only says whether it is current.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass, field
from pathlib import Path

PACKAGE = "skyc.runtime.node_agent"
PARTS = ("base", "status", "accelerators", "sync", "mounts", "supervise", "stop", "autostop",
         "cli")
# What a Python started with -S has loaded before the agent's first line: the only
# modules imported at the top; the rest of the stdlib is imported where it is used.
AT_START = ("os", "sys", "time")
SOURCE_DIR = Path(__file__).with_name("node_agent")
AGENT_FILE = Path(__file__).with_name("agent.py")

GENERATED_NOTE = """\
# Generated from skyc/runtime/node_agent/ by `python -m skyc.runtime.agent_bundle`:
# edit those modules and run it again (a test fails while this file is not current).
"""
START_NOTE = """\
# The agent starts for every phase of every job, and ``run`` needs only what a Python
# started with -S has loaded already (os, sys, time, _signal). What other commands use
# (contextlib, hashlib, json, re, shutil, signal, subprocess, tarfile, uuid) is imported
# where it is used: json alone imports re and enum.
TYPE_CHECKING = False  # typing is not loaded at start either: only type checkers read these
"""


@dataclass
class Part:
    """One module of the agent, taken apart: what it imports at its top, and its code."""

    name: str
    modules: set[str] = field(default_factory=set)  # import os, sys, time
    local: dict[str, str] = field(default_factory=dict)  # name -> the module it is from
    typing: dict[str, set[str]] = field(default_factory=dict)  # under TYPE_CHECKING
    type_local: set[str] = field(default_factory=set)  # the agent's own, under TYPE_CHECKING
    defines: list[str] = field(default_factory=list)  # its top-level names
    code: str = ""


def _where(name: str, node: ast.stmt) -> str:
    return f"{PACKAGE}.{name} line {node.lineno}"


def _is_type_checking(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Assign):
        return [ast.unparse(t) for t in stmt.targets] == ["TYPE_CHECKING"] and (
            isinstance(stmt.value, ast.Constant) and stmt.value.value is False)
    return isinstance(stmt, ast.If) and ast.unparse(stmt.test) == "TYPE_CHECKING"


def _take_import(part: Part, stmt: ast.stmt) -> bool:
    """Record a statement of the module's top; False when it is where its code starts."""
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
        return True  # the docstring
    if isinstance(stmt, ast.Import):
        for alias in stmt.names:
            if alias.name not in AT_START or alias.asname:
                raise ValueError(f"{_where(part.name, stmt)}: import {alias.name} where it is "
                                 f"used (only {', '.join(AT_START)} are imported at the top)")
            part.modules.add(alias.name)
        return True
    if isinstance(stmt, ast.ImportFrom):
        if stmt.module == "__future__":
            return True
        module = stmt.module or ""
        if not module.startswith(PACKAGE + "."):
            raise ValueError(f"{_where(part.name, stmt)}: import from {module} where it is "
                             f"used (only the agent's own modules are imported from at the top)")
        part.local.update((a.asname or a.name, module.rpartition(".")[2]) for a in stmt.names)
        return True
    if isinstance(stmt, ast.If) and _is_type_checking(stmt):
        for inner in stmt.body:
            if not isinstance(inner, ast.ImportFrom) or not inner.module:
                raise ValueError(f"{_where(part.name, inner)}: only imports under TYPE_CHECKING")
            if inner.module.startswith(PACKAGE + "."):
                part.type_local.update(a.name for a in inner.names)
            else:
                part.typing.setdefault(inner.module, set()).update(a.name for a in inner.names)
        return True
    return _is_type_checking(stmt)


def _top_names(stmt: ast.stmt) -> list[str]:
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [stmt.name]
    if isinstance(stmt, ast.Assign):
        return [t.id for t in stmt.targets if isinstance(t, ast.Name)]
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
        return [stmt.target.id]
    return []


def _check_code(name: str, code: list[ast.stmt]) -> None:
    for stmt in code:
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            raise ValueError(f"{_where(name, stmt)}: an import at the top after the code "
                             "(imports go before it, or inside the function that uses them)")
        for node in ast.walk(stmt):
            modules = ([a.name for a in node.names] if isinstance(node, ast.Import)
                       else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            bad = [m for m in modules if m == "skyc" or m.startswith("skyc.")]
            if bad:
                raise ValueError(f"{PACKAGE}.{name} line {getattr(node, 'lineno', '?')}: "
                                 f"imports {bad[0]}, which a node does not have")


def split_part(name: str, source: str) -> Part:
    """A module of the agent taken apart (ValueError naming the line it cannot take)."""
    tree = ast.parse(source)
    part = Part(name)
    code_line = 0
    code: list[ast.stmt] = []
    for i, stmt in enumerate(tree.body):
        if not _take_import(part, stmt):
            code = tree.body[i:]
            break
        code_line = stmt.end_lineno or stmt.lineno
    _check_code(name, code)
    part.defines = [n for stmt in code for n in _top_names(stmt)]
    part.code = "".join(source.splitlines(keepends=True)[code_line:]).strip("\n") + "\n"
    return part


def _check_names(parts: list[Part]) -> None:
    """No name is defined by two modules (in the one file the later would replace the
    earlier); each name a module takes from another is defined there, and that module
    comes before it in :data:`PARTS`."""
    owner: dict[str, str] = {}
    for part in parts:
        for name in part.defines:
            if name in owner:
                raise ValueError(f"{PACKAGE}.{part.name}: defines {name}, which "
                                 f"{PACKAGE}.{owner[name]} defines too")
            owner[name] = part.name
    order = [p.name for p in parts]
    for i, part in enumerate(parts):
        for name, module in sorted(part.local.items()):
            if owner.get(name) != module:
                raise ValueError(f"{PACKAGE}.{part.name}: takes {name} from {module}, which "
                                 "does not define it")
            if module not in order[:i]:
                raise ValueError(f"{PACKAGE}.{part.name}: takes {name} from {module}, which "
                                 "does not come before it in PARTS")
        for name in sorted(part.type_local - set(owner)):
            raise ValueError(f"{PACKAGE}.{part.name}: names the type {name}, which no "
                             "module of the agent defines")


def _import_order(name: str) -> tuple[bool, bool, str]:
    """isort's order within one import: constants, classes, then the rest."""
    return (not name.isupper(), not name[:1].isupper(), name.lower())


def _header(parts: list[Part]) -> str:
    modules = sorted(set().union(*(p.modules for p in parts)))
    typing: dict[str, set[str]] = {}
    for part in parts:
        for module, names in part.typing.items():
            typing.setdefault(module, set()).update(names)
    lines = ["from __future__ import annotations\n", "\n"]
    lines += [f"import {m}\n" for m in modules] + ["\n"]
    lines.append(START_NOTE)
    if typing:
        lines.append("if TYPE_CHECKING:\n")
        lines += [f"    from {m} import {', '.join(sorted(names, key=_import_order))}\n"
                  for m, names in sorted(typing.items())]
    return "".join(lines)


def bundle(docstring: str, sources: list[tuple[str, str]]) -> str:
    """The one file: ``docstring`` (its source, quotes included), the import header, then
    the code of each ``(name, source)`` module in order."""
    parts = [split_part(name, source) for name, source in sources]
    _check_names(parts)
    head = f"{docstring.rstrip()}\n\n{GENERATED_NOTE}\n{_header(parts)}"
    return "\n\n".join([head, *(p.code for p in parts)])


def _docstring(source: str) -> str:
    tree = ast.parse(source)
    first = tree.body[0] if tree.body else None
    if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)):
        raise ValueError(f"{PACKAGE} has no docstring: the agent's file starts with it")
    return ast.get_source_segment(source, first) or ""


def build(source_dir: Path = SOURCE_DIR) -> str:
    """The agent's file as the modules in ``source_dir`` make it now."""
    docstring = _docstring((source_dir / "__init__.py").read_text(encoding="utf-8"))
    sources = [(name, (source_dir / f"{name}.py").read_text(encoding="utf-8"))
               for name in PARTS]
    return bundle(docstring, sources)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    text = build()
    current = AGENT_FILE.read_text(encoding="utf-8") if AGENT_FILE.exists() else ""
    if args == ["--check"]:
        if text != current:
            print(f"{AGENT_FILE} is not current: run python -m skyc.runtime.agent_bundle")
            return 1
        return 0
    if args:
        print("usage: python -m skyc.runtime.agent_bundle [--check]", file=sys.stderr)
        return 2
    if text != current:
        AGENT_FILE.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
