"""What a plan says of its tasks' buckets: each one created, used again (skyc created it
before) or read as it is, where it is mounted and how. Read from the task files, the
placements and the state: nothing is asked of a store at plan time."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from skyc.errors import StorageError
from skyc.settings.config import SkycConfig


@dataclass(frozen=True)
class BucketNote:
    task: str
    cluster: str
    target: str
    url: str
    store: str
    mode: str
    action: Literal["create", "reuse", "read"]
    persistent: bool

    def document(self) -> dict[str, Any]:
        return {"task": self.task, "cluster": self.cluster, "target": self.target,
                "url": self.url, "store": self.store, "mode": self.mode,
                "action": self.action, "persistent": self.persistent}

    def line(self) -> str:
        what = {"create": "created", "reuse": "used again (skyc created it)",
                "read": "read as it is"}[self.action]
        if self.action != "read":
            what += ", persistent" if self.persistent else f", destroyed with {self.cluster}"
        return (f"bucket {self.url}: {what}; mounted at {self.target} ({self.mode}) on "
                f"cluster {self.cluster}")


def bucket_notes(tasks: Sequence[Any], clouds: Sequence[str], clusters: Sequence[str],
                 config: SkycConfig) -> list[BucketNote]:
    """One note per bucket mount of each task, placed on ``clouds[i]`` as ``clusters[i]``.
    A task whose buckets cannot be used as written gets none (apply refuses it)."""
    from skyc.apply.buckets import task_uses
    from skyc.state.database import StateDB
    from skyc.state.storage import get_storage

    notes = []
    with StateDB() as db:
        for task, cloud, cluster in zip(tasks, clouds, clusters, strict=True):
            try:
                uses = task_uses(task, cloud, config)
            except StorageError:
                continue
            for use in uses:
                action: Literal["create", "reuse", "read"] = "read"
                if use.created:
                    action = "reuse" if get_storage(db, use.bucket) is not None else "create"
                notes.append(BucketNote(task.name or "task", cluster, use.target, use.url,
                                        use.store, use.mode, action, use.persistent))
    return notes
