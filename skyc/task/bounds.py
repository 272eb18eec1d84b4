"""Limits on what a task file may expand to, checked before it becomes Python data.

YAML aliases let a few hundred bytes stand for billions of values ("billion
laughs": nine levels of nine aliases). Everything after parsing (merge keys,
``${VAR}`` substitution, validation, normalization) walks the values as a tree,
so the file is measured as that tree first:

* :func:`check_events` streams the parser's events (no document is built) and
  refuses a file with more than ``MAX_VALUES`` values as written or nested
  deeper than ``MAX_DEPTH``;
* :func:`check_expansion` counts the values of each composed document with
  every alias expanded (shared nodes are counted once per use, in time linear
  in the document) and refuses more than ``MAX_VALUES`` in all, naming the
  field that holds the most.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import yaml

from skyc.errors import SpecProblem, TaskSpecError

MAX_VALUES = 500_000
MAX_DEPTH = 100

_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-/~.")


def _problem(shown: str, path: str, line: int | None, message: str) -> TaskSpecError:
    return TaskSpecError([SpecProblem(file=shown, path=path, line=line, message=message)])


def _line(event: yaml.Event) -> int | None:
    mark = event.start_mark
    return mark.line + 1 if mark is not None else None


def check_events(text: str, shown: str, loader: Any) -> int:
    """Refuse a file with more than MAX_VALUES values or nested deeper than MAX_DEPTH,
    reading only the parser's event stream; returns how many aliases it uses (none:
    nothing expands). YAML errors are left to the composer."""
    count = 0
    depth = 0
    aliases = 0
    try:
        for event in yaml.parse(text, Loader=loader):
            if isinstance(event, yaml.ScalarEvent):
                count += 1
            elif isinstance(event, yaml.AliasEvent):
                count += 1
                aliases += 1
            elif isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                count += 1
                depth += 1
                if depth > MAX_DEPTH:
                    raise _problem(shown, "", _line(event),
                                   f"invalid YAML: nested deeper than {MAX_DEPTH} levels")
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
            if count > MAX_VALUES:
                raise _problem(shown, "", _line(event),
                               f"holds more than {MAX_VALUES:,} values; a task file holds "
                               f"at most {MAX_VALUES:,}")
    except yaml.YAMLError:
        pass
    return aliases


def _children(node: yaml.Node) -> list[yaml.Node]:
    """Keys and values of a mapping, items of a sequence: each counts as a value."""
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _sizes(root: yaml.Node) -> dict[int, int]:
    """Expanded size of every collection under ``root`` (by ``id``; a scalar is 1),
    each node visited once. Sizes are capped just above MAX_VALUES: that is all a
    verdict needs."""
    sizes: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    scalar = yaml.ScalarNode
    while stack:
        node, ready = stack.pop()
        key = id(node)
        if key in sizes:
            continue
        if isinstance(node, scalar):
            sizes[key] = 1
            continue
        kids = _children(node)
        if ready:
            total = 1 + sum(1 if isinstance(k, scalar) else sizes[id(k)] for k in kids)
            sizes[key] = min(total, MAX_VALUES + 1)
            continue
        stack.append((node, True))
        stack.extend((k, False) for k in kids
                     if not isinstance(k, scalar) and id(k) not in sizes)
    return sizes


def _field(key: str) -> str:
    return key if key and set(key) <= _PLAIN and not key[0].isdigit() else repr(key)


def _biggest_field(root: yaml.Node, sizes: dict[int, int]) -> tuple[str, int]:
    """The path (through mappings) to the field that holds the most values, and its line."""
    parts: list[str] = []
    line = root.start_mark.line + 1
    node = root
    while isinstance(node, yaml.MappingNode) and node.value:
        key, value = max(node.value, key=lambda kv: sizes.get(id(kv[1]), 1))
        if parts and sizes.get(id(value), 1) <= MAX_VALUES:
            break
        parts.append(_field(str(key.value)) if isinstance(key, yaml.ScalarNode) else "?")
        line = key.start_mark.line + 1
        node = value
    return ".".join(parts), line


def check_expansion(nodes: Sequence[yaml.Node | None], shown: str) -> None:
    """Refuse documents whose values, with every alias expanded, number more than
    MAX_VALUES (in all), naming the field that holds the most of them."""
    total = 0
    for number, node in enumerate(nodes, start=1):
        if node is None:
            continue
        sizes = _sizes(node)
        total += sizes[id(node)]
        if total > MAX_VALUES:
            path, line = _biggest_field(node, sizes)
            where = f" (document {number})" if len(nodes) > 1 else ""
            raise _problem(
                shown, path, line,
                f"expands to more than {MAX_VALUES:,} values{where}: YAML aliases repeat "
                f"what they name, and a task file holds at most {MAX_VALUES:,} values",
            )
