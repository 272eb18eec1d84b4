"""Turn pydantic validation errors into :class:`SpecProblem`s a user can act on:
the field path as written in YAML, the line, and a did-you-mean for misspelt keys."""

from __future__ import annotations

import datetime
import difflib
import re
import types
from collections.abc import Iterator
from typing import Annotated, Any, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, ValidationError

from skyc.errors import SpecProblem

Loc = tuple[str | int, ...]
LineMap = dict[tuple[str, ...], int]

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_SECRET_FIELDS = ("secrets",)


class RecursiveAlias(ValueError):
    """A YAML alias refers to a node that contains it (``&a [*a]``)."""

    def __init__(self, line: int) -> None:
        super().__init__("a YAML alias refers to a node that contains it")
        self.line = line


Duplicate = tuple[tuple[str, ...], int, int]  # key path, its line, the first one's line


def line_map(node: yaml.Node | None, duplicates: list[Duplicate] | None = None) -> LineMap:
    """Map each key path (all parts as strings) of a composed YAML document to its line;
    keys given twice in one mapping are appended to ``duplicates``.
    Raises :class:`RecursiveAlias` for a self-containing document."""
    out: LineMap = {}
    active: set[int] = set()
    done: set[int] = set()

    def walk(n: yaml.Node, path: tuple[str, ...]) -> None:
        if id(n) in active:
            raise RecursiveAlias(n.start_mark.line + 1)
        if id(n) in done:
            return
        active.add(id(n))
        visit(n, path)
        active.discard(id(n))
        done.add(id(n))

    def visit(n: yaml.Node, path: tuple[str, ...]) -> None:
        if isinstance(n, yaml.MappingNode):
            first: dict[str, int] = {}
            for key_node, value_node in n.value:
                if isinstance(key_node, yaml.ScalarNode):
                    key, line = str(key_node.value), key_node.start_mark.line + 1
                    sub = (*path, key)
                    if key in first and duplicates is not None and key != "<<":
                        duplicates.append((sub, line, first[key]))
                    first.setdefault(key, line)
                    out.setdefault(sub, line)
                    walk(value_node, sub)
        elif isinstance(n, yaml.SequenceNode):
            for i, item in enumerate(n.value):
                sub = (*path, str(i))
                out.setdefault(sub, item.start_mark.line + 1)
                walk(item, sub)

    if node is not None:
        out[()] = node.start_mark.line + 1
        walk(node, ())
    return out


def render_path(loc: Loc) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        elif _IDENT.match(part):
            text += f".{part}" if text else part
        else:
            text += f"[{part!r}]"
    return text


def _tag_of(tp: Any) -> str | None:
    if get_origin(tp) is Annotated:
        for meta in get_args(tp)[1:]:
            tag = getattr(meta, "tag", None)
            if isinstance(tag, str):
                return tag
    return None


def _strip(tp: Any) -> Any:
    while get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    return tp


def _fields(model: type[BaseModel]) -> dict[str, Any]:
    """A model's fields by the name a task file writes (the alias: ``_metadata``)."""
    return {f.alias or name: f for name, f in model.model_fields.items()}


def model_at(tp: Any, loc: Loc) -> type[BaseModel] | None:
    """The model class found at ``loc`` inside type ``tp``, following pydantic's
    error locations (list indexes, dict keys, union tags)."""
    tp = _strip(tp)
    is_model = isinstance(tp, type) and issubclass(tp, BaseModel)
    if not loc and not is_model and get_origin(tp) in (Union, types.UnionType):
        # An optional section (``Model | None``): the model it holds.
        return next(filter(None, (model_at(m, ()) for m in get_args(tp))), None)
    if not loc:
        return tp if is_model else None
    head, rest = loc[0], loc[1:]
    if is_model:
        field = _fields(tp).get(head) if isinstance(head, str) else None
        return model_at(field.annotation, rest) if field is not None else None
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        members = get_args(tp)
        for member in members:
            if _tag_of(member) == head:
                return model_at(member, rest)
        for member in members:
            found = model_at(member, loc)
            if found is not None:
                return found
        return None
    if origin in (list, tuple):
        return model_at(get_args(tp)[0], rest) if isinstance(head, int) else None
    if origin is dict:
        return model_at(get_args(tp)[1], rest)
    return None


def _clean(loc: Loc) -> Loc:
    return tuple(p for p in loc if not (isinstance(p, str) and (p.startswith("#") or p == "[key]")))


def _line(lines: LineMap, loc: Loc) -> int | None:
    parts = tuple(str(p) for p in loc)
    while True:
        if parts in lines:
            return lines[parts]
        if not parts:
            return None
        parts = parts[:-1]


def _pieces(value: Any, room: int) -> Iterator[str]:
    """``repr(value)`` in pieces, produced lazily: the caller stops after ``room``
    characters, so a huge (or alias-shared) value is never rendered whole."""
    if isinstance(value, dict):
        yield "{"
        for i, (k, v) in enumerate(value.items()):
            yield ", " if i else ""
            yield from _pieces(k, room)
            yield ": "
            yield from _pieces(v, room)
        yield "}"
    elif isinstance(value, (list, tuple, set, frozenset)):
        yield "["
        for i, v in enumerate(value):
            yield ", " if i else ""
            yield from _pieces(v, room)
        yield "]"
    elif isinstance(value, (str, bytes)):
        yield repr(value[:room + 1])
    elif isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        yield f"<an integer of about {int(value.bit_length() * 0.30103) + 1} digits>"
    elif isinstance(value, (bool, int, float, datetime.date, datetime.time)) or value is None:
        yield repr(value)
    else:
        yield f"<{type(value).__name__}>"


def _short(value: Any, limit: int = 60) -> str:
    """A repr of ``value`` cut to ``limit`` characters, built only as far as shown."""
    out: list[str] = []
    size = 0
    for piece in _pieces(value, limit):
        out.append(piece)
        size += len(piece)
        if size > limit:
            return "".join(out)[:limit - 3] + "..."
    return "".join(out)


def _message(err: Any, root: type[BaseModel], clean: Loc) -> tuple[str, str | None]:
    kind = err["type"]
    raw_loc: Loc = tuple(err["loc"])
    if kind == "extra_forbidden":
        key = str(raw_loc[-1])
        parent = model_at(root, raw_loc[:-1])
        names = sorted(_fields(parent)) if parent is not None else []
        close = difflib.get_close_matches(key, names, n=1)
        msg = f"unknown field '{key}'"
        if key in ("any_of", "ordered") and len(raw_loc) > 2:
            msg = f"'{key}' cannot be nested inside another 'any_of'/'ordered'"
        if not close and parent is not None and len(raw_loc) == 1:
            resources = parent.model_fields.get("resources")
            res_model = model_at(resources.annotation, ()) if resources else None
            if res_model is not None and key in res_model.model_fields:
                msg += " (it belongs under 'resources')"
        return msg, close[0] if close else None
    if kind == "missing":
        return "required field is missing", None
    if raw_loc and raw_loc[-1] == "[key]" and kind == "string_pattern_mismatch":
        return f"invalid name {str(err['input'])!r}: names must match [a-zA-Z_][a-zA-Z0-9_]*", None
    msg = str(err["msg"])
    if kind == "value_error":
        msg = msg.removeprefix("Value error, ")
        return msg, None
    msg = msg[:1].lower() + msg[1:]
    secret = bool(clean) and clean[0] in _SECRET_FIELDS
    typed = kind.endswith("_type") or kind.endswith("_parsing") or kind == "literal_error"
    if typed and not secret:
        msg += f", got {_short(err['input'])}"
    return msg, None


def problems_from(
    exc: ValidationError, root: type[BaseModel], file: str, lines: LineMap
) -> list[SpecProblem]:
    """One problem per distinct (path, message) of ``exc``, validated against ``root``."""
    out: list[SpecProblem] = []
    seen: set[tuple[str, str]] = set()
    for err in exc.errors(include_url=False):
        clean = _clean(tuple(err["loc"]))
        message, suggestion = _message(err, root, clean)
        path = render_path(clean)
        if (path, message) in seen:
            continue
        seen.add((path, message))
        out.append(
            SpecProblem(
                file=file, path=path, message=message,
                line=_line(lines, clean), suggestion=suggestion,
            )
        )
    return out
