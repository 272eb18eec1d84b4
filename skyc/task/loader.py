"""Load a task file: one task, or a pipeline of tasks (``---``) with an optional
header document. Every problem in the file is reported at once, as one
:class:`TaskSpecError`; the file, field path and line are named in each."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

import yaml
from pydantic import ValidationError

from skyc.errors import ConfigError, SpecProblem, TaskSpecError
from skyc.task.bounds import check_events, check_expansion
from skyc.task.overrides import apply_to_document
from skyc.task.problems import (
    Duplicate,
    LineMap,
    RecursiveAlias,
    line_map,
    problems_from,
    render_path,
)
from skyc.task.reading import read_text
from skyc.task.resources import scalar_to_str
from skyc.task.spec import ENV_NAME_PATTERN, HEADER_KEYS, JobGroupHeader, Task

_ENV_NAME = re.compile(ENV_NAME_PATTERN)
_VAR_REF = re.compile(r"\$\{([a-zA-Z_][a-zA-Z0-9_]*)\}|\$([a-zA-Z_][a-zA-Z0-9_]*)")


class TaskFile(NamedTuple):
    """A loaded task file (a named tuple: see ``skyc.catalog.offer``)."""

    path: Path
    header: JobGroupHeader | None
    tasks: list[Task]
    warnings: list[SpecProblem]

    def dump(self) -> list[dict[str, Any]]:
        """Every document, normalized (header first when there is one)."""
        docs = [self.header.dump()] if self.header is not None else []
        return docs + [t.dump() for t in self.tasks]


def parse_env_flags(items: list[str]) -> dict[str, str]:
    """``--env KEY=VAL`` flags; ``--env KEY`` takes KEY's value from this environment."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        _check_name(key, "--env", item)
        if not sep:
            if key not in os.environ:
                raise ConfigError(f"--env {key}: {key} is not set in this environment",
                                  hint=f"give a value: --env {key}=VALUE")
            value = os.environ[key]
        out[key] = value
    return out


def parse_secret_flags(items: list[str]) -> dict[str, str | None]:
    """``--secret KEY=VAL`` or ``--secret KEY`` (None: taken from the environment)."""
    out: dict[str, str | None] = {}
    for item in items:
        key, sep, value = item.partition("=")
        _check_name(key, "--secret", item.partition("=")[0])
        out[key] = value if sep else None
    return out


def _check_name(key: str, flag: str, shown: str) -> None:
    if not _ENV_NAME.match(key):
        raise ConfigError(f"{flag} {shown}: invalid name {key!r}; names match "
                          "[a-zA-Z_][a-zA-Z0-9_]*", hint=f"write {flag} KEY=VALUE")


def substitute(value: Any, env: Mapping[str, str]) -> Any:
    """Replace ``${VAR}`` / ``$VAR`` with values from ``env`` in strings (and in the
    keys and values of mappings, and items of lists); unknown names are kept."""
    if isinstance(value, str):
        return _VAR_REF.sub(lambda m: env.get(m.group(1) or m.group(2), m.group(0)), value)
    if isinstance(value, dict):
        return {substitute(k, env): substitute(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, env) for v in value]
    return value


# libyaml's parser when PyYAML has it (about 10x faster), with the same safe constructor.
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Constructor(yaml.constructor.SafeConstructor):
    """PyYAML's safe constructor; a scalar it cannot convert (an integer of more
    digits than Python converts, a date such as 2020-13-45) is a YAML error at its line."""

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except (ValueError, OverflowError) as exc:
            value = str(node.value)[:40] if isinstance(node, yaml.ScalarNode) else ""
            what = str(node.tag).rsplit(":", 1)[-1]
            why = "too many digits" if what == "int" else str(exc)
            raise yaml.constructor.ConstructorError(
                None, None, f"cannot read {what} {value!r}: {why}", node.start_mark
            ) from None


def _construct(nodes: list[Any]) -> list[Any]:
    """Python data of composed documents; aliases stay shared (not copied)."""
    constructor = _Constructor()
    return [None if n is None else constructor.construct_document(n) for n in nodes]


def _documents(text: str, shown: str) -> list[tuple[Any, LineMap]]:
    duplicates: list[Duplicate] = []
    aliases = check_events(text, shown, _LOADER)
    try:
        try:
            nodes = list(yaml.compose_all(text, Loader=_LOADER))
        except yaml.YAMLError:
            if _LOADER is yaml.SafeLoader:
                raise
            # Report the pure-Python parser's error: its wording is the documented one.
            nodes = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
        lines = [line_map(n, duplicates) for n in nodes]
        if aliases:
            check_expansion(nodes, shown)
        data = _construct(nodes)
    except RecursiveAlias as exc:
        raise TaskSpecError([SpecProblem(file=shown, path="", line=exc.line,
                                         message=f"invalid YAML: {exc}")]) from None
    except RecursionError:
        raise TaskSpecError([SpecProblem(file=shown, path="",
                                         message="invalid YAML: nested too deeply")]) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        raise TaskSpecError([SpecProblem(
            file=shown, path="", message=f"invalid YAML: {problem}",
            line=mark.line + 1 if mark is not None else None,
        )]) from None
    if duplicates:
        raise TaskSpecError([
            SpecProblem(file=shown, line=line,
                        path=render_path(tuple(int(p) if p.isdigit() else p for p in path)),
                        message=f"key given twice (first on line {first})")
            for path, line, first in duplicates
        ])
    docs = list(zip(data, lines, strict=True))
    while docs and docs[-1][0] is None:
        docs.pop()
    if not docs:
        raise TaskSpecError([SpecProblem(file=shown, path="", message="file is empty")])
    return docs


def _is_header(doc: Any, count: int) -> bool:
    return count > 1 and isinstance(doc, dict) and bool(doc) and set(doc) <= HEADER_KEYS


def _apply_overrides(
    doc: dict[str, Any], env: Mapping[str, str], secrets: Mapping[str, str | None]
) -> dict[str, Any]:
    doc = dict(doc)
    if env:
        envs = doc.get("envs")
        doc["envs"] = {**(envs if isinstance(envs, dict) else {}), **env}
    if secrets:
        declared = doc.get("secrets")
        given = {k: v if v is not None else os.environ.get(k) for k, v in secrets.items()}
        doc["secrets"] = {**(declared if isinstance(declared, dict) else {}), **given}
    envs = doc.get("envs")
    if isinstance(envs, dict):
        # The same text the model will hold for each value (``true``, ``3``, dates).
        values = {str(k): text for k, v in envs.items()
                  if isinstance(text := scalar_to_str(v), str)}
        for key in ("file_mounts", "workdir", "volumes"):
            if key in doc:
                doc[key] = substitute(doc[key], values)
    return doc


def _null_values(
    task: Task, shown: str, lines: LineMap, severity: str, unset: set[str]
) -> list[SpecProblem]:
    """Envs and secrets without a value; ``unset`` were named by ``--secret KEY`` but
    are not in this environment."""
    out = []
    for section, values, flag in (
        ("envs", task.envs, "--env {k}=VALUE"),
        ("secrets", task.secrets, "--secret {k}"),
    ):
        for k, v in values.items():
            if v is None:
                message = f"no value given; pass it with {flag.format(k=k)}"
                if section == "secrets" and k in unset:
                    message = f"--secret {k} was given but {k} is not set in this environment"
                out.append(SpecProblem(
                    file=shown, path=f"{section}.{k}", line=lines.get((section, k)),
                    message=message,
                    severity="error" if severity == "error" else "warning",
                ))
    return out


# Fields skyc accepts (SkyPilot task files load unchanged) but does not act on where
# they are set.
_NOT_HONOURED = {
    "autostop": "autostop is acted on as resources.autostop; in an alternative it is "
                "ignored (move it up to resources)",
    "job_recovery": "job_recovery is acted on as resources.job_recovery (by `skyc jobs "
                    "launch`); in an alternative it is ignored (move it up to resources)",
}


def _not_honoured(task: Task, shown: str, lines: LineMap) -> list[SpecProblem]:
    """A warning for each field that is set but not acted on, where it is set (in the
    any_of / ordered alternatives)."""
    res = task.resources
    entries: list[tuple[tuple[str | int, ...], Any]] = []
    for kind in ("any_of", "ordered"):
        entries += [(("resources", kind, i), e) for i, e in enumerate(getattr(res, kind) or [])]
    out = []
    for loc, entry in entries:
        for key, message in _NOT_HONOURED.items():
            if getattr(entry, key) is not None:
                where = (*loc, key)
                out.append(SpecProblem(
                    file=shown, path=render_path(where), severity="warning", message=message,
                    line=lines.get(tuple(str(p) for p in where)),
                ))
    return out


def _pool_problems(task: Task, shown: str, lines: LineMap) -> list[SpecProblem]:
    """SkyPilot's rules for a pool's task: workers only set up, never run; not a service."""
    if task.pool is None:
        return []
    out = []
    if task.service is not None:
        out.append(SpecProblem(
            file=shown, path="service", line=lines.get(("service",)),
            message="a task is a pool or a service, not both; drop one section"))
    return out


class _Inputs(NamedTuple):
    """What the command line adds to every document of a file."""

    env: Mapping[str, str]
    secrets: Mapping[str, str | None]
    require_values: bool
    overrides: Mapping[str, Any]


def _split_header(docs: list[tuple[Any, LineMap]], shown: str) -> tuple[
        JobGroupHeader | None, list[tuple[Any, LineMap]], int, list[SpecProblem]]:
    """(the job group's header, the task documents, the first one's number, problems)."""
    if not _is_header(docs[0][0], len(docs)):
        return None, docs, 1, []
    try:
        return JobGroupHeader.model_validate(docs[0][0]), docs[1:], 2, []
    except ValidationError as exc:
        return None, docs[1:], 2, problems_from(exc, JobGroupHeader, shown, docs[0][1])


def _validated(doc: Any, number: int, lines: LineMap, shown: str,
               inputs: _Inputs) -> Task | list[SpecProblem]:
    """One document as a task, or why it is not one."""
    if not isinstance(doc, dict):
        kind = "empty" if doc is None else f"a {type(doc).__name__}, not a mapping"
        return [SpecProblem(file=shown, path="", line=lines.get(()),
                            message=f"document {number} is {kind}")]
    try:
        doc = apply_to_document(doc, inputs.overrides)
        return Task.model_validate(_apply_overrides(doc, inputs.env, inputs.secrets))
    except ValidationError as exc:
        return problems_from(exc, Task, shown, lines)
    except RecursionError:
        return [SpecProblem(file=shown, path="", line=lines.get(()),
                            message=f"document {number} is nested too deeply")]


def _task_problems(task: Task, shown: str, lines: LineMap, inputs: _Inputs) -> tuple[
        Task, list[SpecProblem], list[SpecProblem]]:
    """(the task as it will run, its errors, its warnings)."""
    errors: list[SpecProblem] = []
    warnings: list[SpecProblem] = []
    unset = {k for k, v in inputs.secrets.items() if v is None and k not in os.environ}
    found = _null_values(
        task, shown, lines, "error" if inputs.require_values else "warning", unset
    )
    (errors if inputs.require_values else warnings).extend(found)
    errors += _pool_problems(task, shown, lines)
    if task.pool is not None and task.run is not None:
        # As SkyPilot: a pool's workers only set up; the jobs submitted to it run.
        warnings.append(SpecProblem(
            file=shown, path="run", line=lines.get(("run",)), severity="warning",
            message="a pool's workers run no run section (the jobs submitted to the "
                    "pool do): it is ignored; move the commands to setup or to the "
                    "job's own task file"))
        task = task.model_copy(update={"run": None})
    if task.service is not None:
        warnings.append(SpecProblem(
            file=shown, path="service", line=lines.get(("service",)), severity="warning",
            message="the 'service' section is served by `skyc serve up` (on local); "
                    "plan shows its replicas' cost range; apply and launch run the task as one "
                    "cluster and ignore the section",
        ))
    warnings += _not_honoured(task, shown, lines)
    return task, errors, warnings


def load_tasks(
    path: str | Path,
    *,
    env: Mapping[str, str] | None = None,
    secrets: Mapping[str, str | None] | None = None,
    require_values: bool = False,
    overrides: Mapping[str, Any] | None = None,
) -> TaskFile:
    """Load and validate a task file. Raises :class:`TaskSpecError` listing every
    problem. With ``require_values`` an env or secret without a value is an error
    (plan/apply need them); otherwise it is a warning. ``overrides`` (command-line
    resource flags, :func:`skyc.task.overrides.resource_overrides`) replace fields
    of every task before it is validated."""
    path = Path(path)
    shown = str(path)
    inputs = _Inputs(env or {}, secrets or {}, require_values, overrides or {})
    header, docs, first, errors = _split_header(
        _documents(read_text(path, shown), shown), shown)
    warnings: list[SpecProblem] = []
    tasks: list[Task] = []
    for number, (doc, lines) in enumerate(docs, start=first):
        task = _validated(doc, number, lines, shown, inputs)
        if isinstance(task, list):
            errors += task
            continue
        task, task_errors, task_warnings = _task_problems(task, shown, lines, inputs)
        errors += task_errors
        warnings += task_warnings
        tasks.append(task)
    if errors:
        raise TaskSpecError(sorted(errors, key=lambda p: p.line or 0))
    return TaskFile(path=path, header=header, tasks=tasks, warnings=warnings)
