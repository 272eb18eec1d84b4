"""``skyc apply PLANFILE``: check a saved plan is still what was reviewed, then say how
to launch it (the tasks, reloaded from their files, and the launch options).

Stale when any input moved since the plan: a task file, the config, the catalog (a
price or offer the plan chose or ranked), a stack (the same placement compiles to
other files), or a cluster's state (applied, changed or destroyed since). The
engine's plan at apply must then list exactly the reviewed changes
(:func:`skyc.apply.provision.check_expected`), or nothing is applied.
"""

from __future__ import annotations

import base64
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from skyc.errors import StalePlan, StateError, UnsupportedFeature
from skyc.review import digests
from skyc.review.planfile import SavedPlan, stack_files

if TYPE_CHECKING:
    from skyc.apply.launch import LaunchOptions
    from skyc.settings.config import SkycConfig
    from skyc.task import Task


def load_tasks_of(saved: SavedPlan, secrets: dict[str, str | None]) -> list[Task]:
    """The plan's tasks, loaded again from their (unchanged) files with the plan's
    ``--env`` values and overrides; secrets come from ``secrets`` or the environment."""
    from skyc.task import load_tasks

    files = list(dict.fromkeys(t.file for t in saved.tasks))  # in the plan's order
    tasks: list[Task] = []
    for file in files:
        tasks += load_tasks(Path(file), env=saved.options.env, secrets=secrets,
                            require_values=True, overrides=saved.options.overrides).tasks
    return tasks


def moved_inputs(saved: SavedPlan, tasks: list[Task], config: SkycConfig) -> list[str]:
    """What changed since the plan, one phrase each (empty: nothing)."""
    from skyc.apply.infra import catalog_for
    from skyc.optimizer import optimize

    moved = []
    for file, digest in sorted(saved.inputs.task_files.items()):
        path = Path(file)
        if not path.is_file():
            moved.append(f"task file {file} is gone")
        elif digests.of_file(path) != digest:
            moved.append(f"task file {file} changed")
    if digests.of_config(config) != saved.inputs.config:
        moved.append("the config changed")
    opts = saved.options
    catalog_dir = Path(opts.catalog_dir) if opts.catalog_dir else None
    if not moved:
        cat = catalog_for(config, tasks, infra=opts.infra, catalog_dir=catalog_dir)
        from skyc.apply.data_sources import task_data

        plan = optimize(list(tasks), cat, target="time" if opts.optimize == "time" else "cost",
                        infra=opts.infra, data=task_data(tasks))
        if digests.of_catalog(plan) != saved.inputs.catalog:
            moved.append("the catalog changed (an offer or price the plan chose or ranked)")
    by_name = {t.cluster: t for t in saved.tasks}
    for task, st, placements in zip(tasks, saved.stacks, saved.placements, strict=False):
        if st.cluster not in by_name:
            moved.append(f"stack {st.cluster} has no task in the plan")
            continue
        if not moved:
            files = stack_files(st.cluster, placements[0], task, config, st.engine)
            if digests.of_stack(files) != st.digest:
                moved.append(f"stack {st.cluster} compiles to other files now")
        if digests.of_cluster_state(st.cluster) != st.state:
            moved.append(f"cluster {st.cluster} changed since the plan (applied, changed "
                         "or destroyed)")
    return moved


def launch_options(path: Path, saved: SavedPlan, tasks: list[Task], config: SkycConfig,
                   base: LaunchOptions) -> LaunchOptions:
    """``base`` with the plan's placements and reviewed changes; refuses a stale plan."""
    from skyc.apply.launch import ReviewedPlacements

    if len(saved.tasks) != 1 or len(tasks) != 1:
        raise UnsupportedFeature(
            f"{path}: apply runs one task at a time; this plan holds {len(saved.tasks)}",
            hint="plan and apply each task file on its own")
    moved = moved_inputs(saved, tasks, config)
    if moved:
        raise StalePlan(path, moved)
    st = saved.stacks[0]
    if st.changes is None:
        raise StateError(f"{path}: the plan holds no engine diff for stack {st.cluster} "
                         f"({st.note or 'not computed'}); nothing was applied",
                         hint="plan again where the engine can run (without --no-diff)")
    opts = saved.options
    # An engine plan made in the cluster's own workspace (it existed at plan time, and
    # its state has not moved since) is applied as it is; one made in a temporary
    # folder for a new cluster holds a throwaway key, and the engine plans again there.
    raw = base64.b64decode(st.engine_plan) if st.engine_plan and st.state != "absent" else None
    return replace(
        base, cluster=saved.tasks[0].cluster, infra=opts.infra,
        catalog_dir=Path(opts.catalog_dir) if opts.catalog_dir else None,
        target=opts.optimize, engine=st.engine, confirm=None,
        reviewed=ReviewedPlacements(placements=saved.placements[0],
                                    changes=[(a, b) for a, b in st.changes],
                                    engine_plan=raw))
