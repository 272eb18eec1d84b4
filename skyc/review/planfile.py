"""Saved plan files: what ``skyc plan -o FILE`` writes and ``skyc apply FILE`` applies.

A plan file is one JSON document (``format: skyc-plan``, ``format_version``
MAJOR.MINOR: additions bump the minor; a reader refuses another major) holding:

- ``tasks``: each task as :meth:`Task.dump` writes it (secret values are never
  stored: ``secrets_to_supply`` names the ones ``apply`` must be given again, with
  ``--secret`` or the environment), its file and its cluster;
- ``placements``: per task, the chosen placement then the ranked alternatives a
  failover after this plan may use (and no other);
- ``stacks``: per cluster, the generated stack (the engine's files), its digest, the
  reviewed changes (address, action), and the engine's own saved plan (base64: a
  terraform plan file, a pulumi preview), which can hold other sensitive values of
  the stack, as Terraform's saved plans do: keep plan files where the stack's state
  would be kept;
- ``inputs``: digests of every input (each task file, the config, the catalog as the
  plan saw it, each stack, each cluster's state), the catalog's source and date, and
  the options the plan was made with (``--env`` values, resource overrides).

``apply`` recomputes each digest and refuses, naming what moved, when one differs.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from skyc.errors import ConfigError
from skyc.model.plan import Placement
from skyc.review import digests

if TYPE_CHECKING:
    from skyc.model.plan import Plan
    from skyc.settings.config import SkycConfig
    from skyc.stacks.engine import StackDiff
    from skyc.task import Task

FORMAT = "skyc-plan"
FORMAT_VERSION = "1.0"


class _Model(BaseModel):
    # Validators are built when a plan file is first written or read.
    model_config = ConfigDict(extra="forbid", defer_build=True)


class PlanOptions(_Model):
    """How the plan was made; ``apply`` makes it again the same way."""

    infra: str | None = None
    catalog_dir: str | None = None
    optimize: str = "cost"
    engine: str | None = None
    cluster: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    overrides: dict[str, Any] = Field(default_factory=dict)


class SavedTask(_Model):
    name: str | None
    cluster: str
    file: str
    task: dict[str, Any]
    secrets_to_supply: list[str] = Field(default_factory=list)


class SavedStack(_Model):
    cluster: str
    engine: str
    files: dict[str, str]
    digest: str
    state: str                                   # digests.of_cluster_state at plan time
    changes: list[tuple[str, str]] | None        # None: no engine diff was computed
    engine_plan: str | None = None               # base64 of the engine's saved plan
    note: str | None = None


class Inputs(_Model):
    task_files: dict[str, str]
    config: str
    catalog: str
    catalog_source: str | None = None
    catalog_date: str | None = None


class SavedPlan(_Model):
    format: str = FORMAT
    format_version: str = FORMAT_VERSION
    skyc_version: str
    options: PlanOptions
    inputs: Inputs
    tasks: list[SavedTask]
    placements: list[list[Placement]]
    stacks: list[SavedStack]


class Artifacts:
    """Collects each stack's engine plan while its workspace exists (``on_plan``)."""

    def __init__(self) -> None:
        self.plans: dict[str, bytes] = {}

    def __call__(self, cluster: str, workspace: Path, diff: StackDiff) -> None:
        if diff.plan_file and Path(diff.plan_file).is_file():
            self.plans[cluster] = Path(diff.plan_file).read_bytes()


def stack_files(cluster: str, placement: Placement, task: Task, config: SkycConfig,
                engine: str) -> dict[str, str]:
    """The cluster's stack as its engine's emitter writes it (pure: the cluster's
    workspace is read, for the owner recorded when it was created, never written)."""
    from skyc.compiler import build_stack
    from skyc.stacks.registry import emit
    from skyc.stacks.workspace import cluster_workspace

    candidate = task.candidates()[placement.candidate_index]
    stack = build_stack(cluster, placement, candidate, config=config,
                        workspace=cluster_workspace(cluster))
    return emit(stack, engine)


def build(
    *, task_files: list[Path], tasks: list[Task], names: list[str], plan: Plan,
    stacks: list[dict[str, Any]], artifacts: Artifacts, config: SkycConfig,
    options: PlanOptions,
) -> SavedPlan:
    """The plan file's document for a plan and its engine diffs (``task_files``: each
    task's file)."""
    from skyc import __version__
    from skyc.compiler import choose_engine

    saved_stacks = []
    by_cluster = {st["cluster"]: st for st in stacks}
    for task, tp, cluster in zip(tasks, plan.tasks, names, strict=True):
        st = by_cluster.get(cluster)
        engine = st["engine"] if st else choose_engine(tp.placement.cloud, options.engine, config)
        files = stack_files(cluster, tp.placement, task, config, engine)
        changes = None
        if st is not None and st["status"] == "ok":
            changes = sorted((rc["address"], _action(rc["actions"]))
                             for rc in st["resource_changes"]
                             if rc["actions"] not in (["no-op"], ["read"]))
        raw = artifacts.plans.get(cluster)
        saved_stacks.append(SavedStack(
            cluster=cluster, engine=engine, files=files, digest=digests.of_stack(files),
            state=digests.of_cluster_state(cluster), changes=changes,
            engine_plan=base64.b64encode(raw).decode() if raw is not None else None,
            note=st["note"] if st else "the engine diff was skipped (--no-diff)"))
    return SavedPlan(
        skyc_version=__version__, options=options,
        inputs=Inputs(
            task_files={str(f.resolve()): digests.of_file(f) for f in task_files},
            config=digests.of_config(config), catalog=digests.of_catalog(plan),
            catalog_source=plan.catalog.source if plan.catalog else None,
            catalog_date=plan.catalog.date if plan.catalog else None),
        tasks=[SavedTask(name=t.name, cluster=c, file=str(f.resolve()), task=t.dump(),
                         secrets_to_supply=sorted(t.secrets))
               for t, c, f in zip(tasks, names, task_files, strict=True)],
        placements=[[tp.placement, *tp.alternatives] for tp in plan.tasks],
        stacks=saved_stacks,
    )


def _action(actions: list[str]) -> str:
    return "replace" if actions == ["delete", "create"] else actions[0]


def _rebased(saved: SavedPlan, move: Callable[[str], str]) -> SavedPlan:
    """``saved`` with every task file's path passed through ``move``."""
    inputs = saved.inputs.model_copy(update={"task_files": {
        move(f): d for f, d in saved.inputs.task_files.items()}})
    tasks = [t.model_copy(update={"file": move(t.file)}) for t in saved.tasks]
    return saved.model_copy(update={"inputs": inputs, "tasks": tasks})


def _relative(base: Path) -> Callable[[str], str]:
    import os

    return lambda f: Path(os.path.relpath(f, base)).as_posix()


def _absolute(base: Path) -> Callable[[str], str]:
    import os

    return lambda f: f if os.path.isabs(f) else os.path.normpath(base / f)


def write(path: Path, saved: SavedPlan) -> None:
    """Write the plan file whole (a temporary file renamed: never half-written). Task
    files are recorded relative to the plan file, so a plan made in one checkout applies
    from another (a laptop's, then CI's): their digests, not their places, are checked."""
    import os

    saved = _rebased(saved, _relative(path.resolve().parent))
    text = json.dumps(saved.model_dump(mode="json"), indent=2, sort_keys=True) + "\n"
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(text)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise ConfigError(f"-o {path}: cannot write the plan file ({exc.strerror})",
                          hint="choose a writable path") from None


def looks_like_plan_file(path: Path) -> bool:
    """Whether ``path`` is a saved plan file rather than a task YAML (a FIFO, a device
    or a directory is neither: the task reader refuses it, without blocking)."""
    from skyc.task.reading import peek

    head = peek(path, 4096)
    return head is not None and head.lstrip().startswith(b"{") \
        and f'"format": "{FORMAT}"'.encode() in head


def read(path: Path) -> SavedPlan:
    """A plan file, checked before anything in it is used: a regular file of at most
    32 MiB of bounded JSON, of this format's major version, valid against the schema,
    its own digests well-formed and its stacks' files matching theirs, and each task
    file as it was when the plan was made."""
    from skyc.task.documents import load_json
    from skyc.task.inputs import PLAN

    doc = load_json(path, str(path), PLAN)
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ConfigError(f"{path}: not a skyc plan file (no \"format\": \"{FORMAT}\")",
                          hint="write one with `skyc plan TASK -o FILE`")
    major = str(doc.get("format_version", "")).split(".")[0]
    if major != FORMAT_VERSION.split(".")[0]:
        raise ConfigError(
            f"{path}: plan file format_version {doc.get('format_version')} is not "
            f"readable by this skyc (it reads {FORMAT_VERSION.split('.')[0]}.x)",
            hint="plan again with this skyc")
    try:
        saved = SavedPlan.model_validate(doc)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"{path}: {where}: {first['msg']}",
                          hint="the plan file was changed by hand; plan again") from None
    saved = _rebased(saved, _absolute(path.resolve().parent))
    _check_shape(path, saved)
    _check_digests(path, saved)
    _check_task_files(path, saved)
    return saved


def _refuse(path: Path, what: str) -> ConfigError:
    return ConfigError(f"{path}: {what}; nothing in it was used",
                       hint="the plan file was changed by hand; plan again")


def _check_shape(path: Path, saved: SavedPlan) -> None:
    """One placement list and one stack per task, in the tasks' order."""
    if len(saved.placements) != len(saved.tasks) or not all(saved.placements):
        raise _refuse(path, f"{len(saved.tasks)} task(s) but {len(saved.placements)} "
                            "placement list(s), each holding at least one placement")
    if [st.cluster for st in saved.stacks] != [t.cluster for t in saved.tasks]:
        raise _refuse(path, "its stacks are not one per task, in the tasks' order")
    unlisted = sorted({t.file for t in saved.tasks} - set(saved.inputs.task_files))
    if unlisted:
        raise _refuse(path, f"task file {unlisted[0]} has no digest in inputs.task_files")


def _check_digests(path: Path, saved: SavedPlan) -> None:
    """Every digest well-formed; each stack's files the ones its digest was made of;
    each engine plan base64."""
    import binascii

    fields = {f"inputs.task_files[{f!r}]": d for f, d in saved.inputs.task_files.items()}
    fields.update({"inputs.config": saved.inputs.config, "inputs.catalog": saved.inputs.catalog})
    for st in saved.stacks:
        fields[f"stacks.{st.cluster}.digest"] = st.digest
        if st.state != "absent":  # a cluster skyc had never applied
            fields[f"stacks.{st.cluster}.state"] = st.state
    for name, value in fields.items():
        if not digests.well_formed(value):
            raise _refuse(path, f"{name} is not a digest (sha256:<64 hex digits>)")
    for st in saved.stacks:
        if digests.of_stack(st.files) != st.digest:
            raise _refuse(path, f"stack {st.cluster}'s files do not match its digest")
        try:
            base64.b64decode(st.engine_plan or "", validate=True)
        except (binascii.Error, ValueError):
            raise _refuse(path, f"stacks.{st.cluster}.engine_plan is not base64") from None


def _check_task_files(path: Path, saved: SavedPlan) -> None:
    """Each task file is as it was when the plan was made, before it is loaded again."""
    from skyc.errors import SkycError, StateError

    for file, digest in sorted(saved.inputs.task_files.items()):
        try:
            now = digests.of_file(Path(file))
        except SkycError:
            now = None
        if now != digest:
            moved = "is gone" if now is None and not Path(file).exists() else "changed"
            raise StateError(f"{path}: the plan is stale, nothing was applied: task file "
                             f"{file} {moved}",
                             hint="run `skyc plan ... -o FILE` again and review the new plan")
