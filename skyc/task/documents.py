"""YAML and JSON documents read through the bounded reader, with the task files' caps.

A YAML file (config, policy, kubeconfig) is measured by the parser's event stream
before it is composed (:func:`skyc.task.bounds.check_events`: at most ``MAX_VALUES``
values, nested at most ``MAX_DEPTH`` deep) and, when it uses aliases, with every
alias expanded (:func:`skyc.task.bounds.check_expansion`). A JSON file (saved plan,
catalog, node cache) is measured on its bytes, outside its strings, before
``json.loads`` builds anything: at most ``bounds.max_values`` values, nested at most
``MAX_DEPTH`` deep. Every refusal is ``bounds``' error, naming the file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from itertools import accumulate
from pathlib import Path
from typing import Any

import yaml

from skyc.errors import TaskSpecError
from skyc.task.bounds import MAX_DEPTH, check_events, check_expansion
from skyc.task.problems import RecursiveAlias, line_map
from skyc.task.reading import Bounds, decode, read_bytes, read_text

# libyaml's parser when PyYAML has it, with PyYAML's safe constructor.
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_PIECE = 1 << 18  # JSON is measured this many bytes at a time
_NOT_BRACKET = re.compile(rb"[^\[\]{}]+")
_STEP = [0] * 256
for _c in b"[{":
    _STEP[_c] = 1
for _c in b"]}":
    _STEP[_c] = -1


def _restated(exc: TaskSpecError, bounds: Bounds) -> Exception:
    """A task bound's verdict as ``bounds``' error, naming this kind of file."""
    problem = exc.problems[0]
    message = problem.message.replace("a task file holds", f"{bounds.noun} holds")
    if problem.path:
        message = f"{problem.path}: {message}"
    return bounds.fail(problem.file, message, problem.line)


def _compose(text: str) -> yaml.Node | None:
    try:
        return yaml.compose(text, Loader=_LOADER)
    except yaml.YAMLError:
        if _LOADER is yaml.SafeLoader:
            raise
        return yaml.compose(text, Loader=yaml.SafeLoader)  # its wording is the documented one


def parse_yaml(text: str, shown: str, bounds: Bounds, *, quote: bool = True) -> Any:
    """The one YAML document of ``text`` as Python data (None when empty). ``quote``
    False: a YAML error is "not valid YAML" and its line, without the parser's words
    (which may quote the file, e.g. a kubeconfig's credentials)."""
    try:
        return _parse_yaml(text, shown, bounds)
    except (yaml.YAMLError, ValueError, OverflowError) as exc:
        if not quote:
            raise bounds.fail(shown, "not valid YAML", _line(exc)) from None
        if isinstance(exc, yaml.YAMLError):
            problem = getattr(exc, "problem", None) or str(exc)
            raise bounds.fail(shown, f"invalid YAML: {problem}", _line(exc)) from None
        raise bounds.fail(shown, f"invalid YAML: a value cannot be read ({exc})") from None


def _line(exc: Exception) -> int | None:
    mark = getattr(exc, "problem_mark", None)
    return mark.line + 1 if mark is not None else None


def _parse_yaml(text: str, shown: str, bounds: Bounds) -> Any:
    try:
        aliases = check_events(text, shown, _LOADER)
        node = _compose(text)
        if node is None:
            return None
        if aliases:
            line_map(node)  # refuses a document that contains itself
            check_expansion([node], shown)
        return yaml.constructor.SafeConstructor().construct_document(node)
    except TaskSpecError as exc:
        raise _restated(exc, bounds) from None
    except RecursiveAlias as exc:
        raise bounds.fail(shown, f"invalid YAML: {exc}", exc.line) from None
    except RecursionError:
        raise bounds.fail(shown, "invalid YAML: nested too deeply") from None


def load_yaml(path: Path, shown: str, bounds: Bounds, *, quote: bool = True) -> Any:
    """A YAML file's one document (None when empty), read and measured within ``bounds``."""
    return parse_yaml(read_text(path, shown, bounds), shown, bounds, quote=quote)


def _outside_strings(data: bytes) -> Iterator[bytes]:
    """JSON text without its strings' contents, a piece at a time (escapes are dropped
    first, so every remaining quote opens or closes a string)."""
    data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    inside = False
    for start in range(0, len(data), _PIECE):
        parts = data[start:start + _PIECE].split(b'"')
        yield b"".join(parts[1 if inside else 0::2])
        inside ^= len(parts) % 2 == 0


def check_json(data: bytes, shown: str, bounds: Bounds) -> None:
    """Refuse JSON text with more than ``bounds.max_values`` values or nested deeper than
    ``MAX_DEPTH``, counting commas, colons and brackets outside strings (nothing built)."""
    values, depth, deepest = 1, 0, 0
    for piece in _outside_strings(data):
        values += sum(piece.count(c) for c in (b",", b":", b"[", b"{"))
        if values > bounds.max_values:
            raise bounds.fail(shown, f"holds more than {bounds.max_values:,} values; "
                                     f"{bounds.noun} holds at most {bounds.max_values:,}")
        brackets = _NOT_BRACKET.sub(b"", piece)
        if brackets:
            deepest = max(deepest, max(accumulate(map(_STEP.__getitem__, brackets),
                                                      initial=depth)))
            depth += sum(map(_STEP.__getitem__, brackets))
        if deepest > MAX_DEPTH:
            raise bounds.fail(shown, f"invalid JSON: nested deeper than {MAX_DEPTH} levels")


def parse_json(data: bytes, shown: str, bounds: Bounds) -> Any:
    """JSON bytes (UTF-8) as Python data, measured first (see :func:`check_json`)."""
    check_json(data, shown, bounds)
    text = decode(data, shown, bounds)
    del data
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise bounds.fail(shown, f"invalid JSON: {exc.msg} (column {exc.colno})",
                          exc.lineno) from None
    except RecursionError:
        raise bounds.fail(shown, "invalid JSON: nested too deeply") from None
    except ValueError as exc:
        raise bounds.fail(shown, f"invalid JSON: {exc}") from None


def load_json(path: Path, shown: str, bounds: Bounds) -> Any:
    """A JSON file as Python data, read and measured within ``bounds``."""
    return parse_json(read_bytes(path, shown, bounds), shown, bounds)
