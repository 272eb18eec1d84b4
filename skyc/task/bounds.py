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

import contextlib
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


class _Counter:
    """Values and depth seen so far in one file's event stream."""

    __slots__ = ("aliases", "count", "depth", "index", "line")

    def __init__(self) -> None:
        self.count = 0
        self.depth = 0
        self.aliases = 0
        self.index = 0  # where the last event ended, in the text
        self.line = 0  # lines before the text being read (for a window of the file)

    def read(self, text: str, shown: str, loader: Any) -> None:
        for event in yaml.parse(text, Loader=loader):
            self.index = event.end_mark.index if event.end_mark is not None else self.index
            if isinstance(event, yaml.ScalarEvent):
                self.count += 1
            elif isinstance(event, yaml.AliasEvent):
                self.count += 1
                self.aliases += 1
            elif isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                self.count += 1
                self.depth += 1
                if self.depth > MAX_DEPTH:
                    line = _line(event)
                    raise _problem(shown, "", None if line is None else line + self.line,
                                   f"invalid YAML: nested deeper than {MAX_DEPTH} levels")
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                self.depth -= 1
            if self.count > MAX_VALUES:
                raise _problem(shown, "", _line(event),
                               f"holds more than {MAX_VALUES:,} values; a task file holds "
                               f"at most {MAX_VALUES:,}")


def check_events(text: str, shown: str, loader: Any) -> int:
    """Refuse a file with more than MAX_VALUES values or nested deeper than MAX_DEPTH,
    reading only the parser's event stream; returns how many aliases it uses (none:
    nothing expands). YAML errors are left to the composer.

    libyaml scans ahead before it emits an event, and some of its releases refuse deep
    flow nesting there, with a limit and words of their own. When it stops with an
    error, the text it was scanning ahead (from its last event to the error) is read
    by the pure-Python parser, which emits an event per opened collection: the
    verdict is skyc's bound, with its line, whatever PyYAML release is installed."""
    counter = _Counter()
    try:
        counter.read(text, shown, loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        if loader is yaml.SafeLoader or mark is None or mark.index <= counter.index:
            return counter.aliases
        window = text[counter.index:mark.index]
        if window.count("[") + window.count("{") + counter.depth <= MAX_DEPTH:
            return counter.aliases
        counter.line = text.count("\n", 0, counter.index)
        with contextlib.suppress(yaml.YAMLError):
            counter.read(window, shown, yaml.SafeLoader)
    return counter.aliases


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
