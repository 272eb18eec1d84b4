"""The task ``skyc jobs launch`` hands to the managed-jobs controller.

A task file given as it is goes as it is. One the command line changes (resource
overrides such as ``--gpus``, ``--infra``) and a command given in quotes become a
task file of their own, ``$SKYC_HOME/jobs/tasks/<digest>.yaml``: the controller reads
the task again whenever it provisions (a recovery too), so what it reads must be the
task as launched. That file holds no secret value and no ``--env`` value: both travel
to the controller as they do for any managed job (the secrets on its stdin only).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skyc.task.loader import TaskFile

Secrets = dict[str, str | None]


def handed_task(task: str, *, envs: Mapping[str, str], secrets: Secrets,
                overrides: Mapping[str, Any], infra: str | None) -> tuple[Path, Secrets]:
    """The task file to hand to the controller and the secrets to hand with it; the
    task is checked (and its warnings printed) first."""
    from skyc.cli.output import print_warning
    from skyc.task import load_tasks
    from skyc.task.inline import inline_task, is_task_file

    as_file = is_task_file(task)
    if as_file:
        loaded = load_tasks(Path(task), env=dict(envs), secrets=secrets, require_values=True,
                            overrides=overrides)
    else:
        loaded = inline_task(task, env=envs, secrets=secrets, overrides=overrides)
    for warning in loaded.warnings:
        print_warning(warning.render())
    if as_file and not overrides and infra is None:
        return Path(task), secrets
    values: Secrets = dict(secrets)
    for one in loaded.tasks:
        values.update(one.secret_values())
    return write_task(task_documents(loaded, envs, infra)), values


def task_documents(loaded: TaskFile, envs: Mapping[str, str],
                   infra: str | None) -> list[dict[str, Any]]:
    """The documents of the task file to write: the header, then each task as loaded
    (overrides applied, secret values null), without the ``--env`` values (given to
    the controller apart) and narrowed to ``infra``."""
    docs: list[dict[str, Any]] = [loaded.header.dump()] if loaded.header else []
    for one in loaded.tasks:
        doc = one.dump()
        kept = {k: v for k, v in (doc.pop("envs", None) or {}).items() if k not in envs}
        if kept:
            doc["envs"] = kept
        if infra is not None:
            doc["resources"] = narrowed(doc.get("resources") or {}, infra,
                                        one.name or str(loaded.path))
        docs.append(doc)
    return docs


def narrowed(resources: dict[str, Any], infra: str, task: str) -> dict[str, Any]:
    """``resources`` (a dumped task's) narrowed to ``--infra``, as ``skyc launch
    --infra`` narrows the task's own: each alternative (any_of, ordered) gets its infra
    narrowed, the alternatives that run elsewhere are left out. Refused when none is
    left."""
    from skyc.errors import ConfigError

    res = dict(resources)
    base = res.get("infra")
    kinds = [k for k in ("any_of", "ordered") if isinstance(res.get(k), list)]
    if not kinds:
        res["infra"] = _merge(base, infra)
        if res["infra"] is None:
            raise ConfigError(f"--infra {infra}: task {task} runs on {base}",
                              hint="drop --infra, or change the task's resources.infra")
        return res
    for kind in kinds:
        entries = []
        for entry in res[kind]:
            where = _merge(entry.get("infra") or base, infra)
            if where is not None:
                entries.append({**entry, "infra": where})
        if not entries:
            raise ConfigError(f"--infra {infra}: none of task {task}'s resources.{kind} "
                              "runs there", hint="drop --infra, or add an alternative there")
        res[kind] = entries
    merged = _merge(base, infra)
    if merged is None:
        res.pop("infra", None)  # every alternative says its own infra now
    else:
        res["infra"] = merged
    return res


def _merge(have: str | None, want: str) -> str | None:
    """``want`` within ``have`` (both infra texts); None when they contradict."""
    from skyc.task._parse import fmt_infra, parse_infra
    from skyc.task.candidate import InfraSpec

    mine = parse_infra(have) if have else InfraSpec()
    given = parse_infra(want)
    parts: dict[str, str | None] = {}
    for key in ("cloud", "region", "zone"):
        a, b = getattr(mine, key), getattr(given, key)
        if a is not None and b is not None and a != b:
            return None
        parts[key] = a if a is not None else b
    return fmt_infra(InfraSpec(**parts))


def write_task(docs: list[dict[str, Any]]) -> Path:
    """``docs`` as a YAML task file under ``$SKYC_HOME/jobs/tasks/``, named by its
    content (the same task launched again is the same file)."""
    import yaml

    from skyc.settings.config import skyc_home

    text = yaml.safe_dump_all(docs, sort_keys=True, allow_unicode=True)
    folder = skyc_home() / "jobs" / "tasks"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{hashlib.sha256(text.encode()).hexdigest()[:16]}.yaml"
    if not path.exists():
        partial = path.with_suffix(".partial")
        partial.write_text(text, encoding="utf-8")
        partial.replace(path)
    return path
