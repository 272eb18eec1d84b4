"""skyc: an infrastructure compiler for AI workloads.

The public Python API, one function per stage of the pipeline::

    tasks = skyc.load_tasks("task.yaml").tasks                 # validate
    plan = skyc.optimize(tasks, skyc.load_catalog())           # place
    stack = skyc.build_stack(name, placement, candidate, config=..., workspace=...)
    info = skyc.provision(name, placement, candidate)          # apply (terraform)
    result = skyc.run_job(info, skyc.job_spec_from_task(task)) # run

or the commands' own functions, which print nothing::

    result = skyc.launch(tasks, skyc.LaunchOptions(), reporter)    # skyc apply TASK
    review = skyc.plan_with_diff(["task.yaml"], skyc.PlanDiffOptions(out=saved))  # plan -o
    result = skyc.apply_saved_plan(saved)                          # skyc apply FILE

Names are imported on first use, so ``import skyc`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "load_tasks": "skyc.task",
    "Task": "skyc.task",
    "load_catalog": "skyc.catalog",
    "optimize": "skyc.optimizer",
    "Blocked": "skyc.optimizer",
    "Plan": "skyc.model.plan",
    "Placement": "skyc.model.plan",
    "build_stack": "skyc.compiler",
    "provision": "skyc.apply.provision",
    "teardown": "skyc.apply.provision",
    "run_job": "skyc.runtime",
    "job_spec_from_task": "skyc.runtime",
    "launch": "skyc.apply.launch",
    "LaunchOptions": "skyc.apply.launch",
    "LaunchResult": "skyc.apply.launch",
    "plan_with_diff": "skyc.apply.plan_diff",
    "PlanDiffOptions": "skyc.apply.plan_diff",
    "PlanProgress": "skyc.apply.plan_diff",
    "PlanResult": "skyc.apply.plan_diff",
    "apply_saved_plan": "skyc.apply.saved_plan",
    "SkycError": "skyc.errors",
}

__all__ = ["__version__", *sorted(_EXPORTS)]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'skyc' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
