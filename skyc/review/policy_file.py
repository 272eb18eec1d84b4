"""Where a plan's policy file is: without one, a plan imports no policy model."""

from __future__ import annotations

from pathlib import Path

POLICY_FILE = "skyc-policy.yaml"


def find_policy(explicit: Path | None, task_file: Path, configured: str | None
                ) -> Path | None:
    """``--policy FILE``, else ``skyc-policy.yaml`` beside the task, else the config's.

    Whatever is named ``skyc-policy.yaml`` beside the task is its policy, a FIFO or a
    device as well (the reader refuses those), never passed over."""
    if explicit is not None:
        return explicit
    beside = (task_file if task_file.is_dir() else task_file.parent) / POLICY_FILE
    if beside.exists() or beside.is_symlink():
        return beside
    return Path(configured).expanduser() if configured else None
