"""Task files: SkyPilot-compatible task YAML, loaded into typed models.

``load_tasks`` reads a file (one task, or a pipeline of ``---``-separated tasks
with an optional header document), ``expand_resources`` flattens a task's
resources into concrete :class:`ResourceCandidate`s for the optimizer.
"""

from __future__ import annotations

from skyc.task.candidate import AcceleratorRequest, InfraSpec, Quantity, ResourceCandidate
from skyc.task.expand import expand_resources
from skyc.task.loader import TaskFile, load_tasks, parse_env_flags, parse_secret_flags
from skyc.task.resources import Accelerators, Autostop, JobRecovery, Resources, ResourcesEntry
from skyc.task.spec import GitWorkdir, JobGroupHeader, StorageMount, Task, is_bucket_uri

__all__ = [
    "AcceleratorRequest",
    "Accelerators",
    "Autostop",
    "GitWorkdir",
    "InfraSpec",
    "JobGroupHeader",
    "JobRecovery",
    "Quantity",
    "ResourceCandidate",
    "Resources",
    "ResourcesEntry",
    "StorageMount",
    "Task",
    "TaskFile",
    "expand_resources",
    "is_bucket_uri",
    "load_tasks",
    "parse_env_flags",
    "parse_secret_flags",
]
