"""Where a task's data is, for the optimizer: each bucket ``_metadata.skyc.reads``
names, located on the cloud whose store it is in (S3 on AWS, GCS on GCP), in the region
skyc created it in when skyc did (the state says), else in a region not known."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from skyc.optimizer.data import DataSource


def task_reads(task: Any) -> dict[str, float]:
    """URL -> GB the task says it reads from it (``_metadata.skyc.reads``); empty when
    it says nothing."""
    meta = getattr(task, "metadata", None)
    skyc = getattr(meta, "skyc", None) if meta is not None else None
    return dict(getattr(skyc, "reads", None) or {})


def task_data(tasks: Sequence[Any]) -> list[list[DataSource]] | None:
    """Per task, the buckets it reads and where they are; None when no task says."""
    if not any(task_reads(t) for t in tasks):
        return None
    from skyc.state.database import StateDB
    from skyc.state.storage import get_storage
    from skyc.storage.stores import store_of_url, store_target

    out: list[list[DataSource]] = []
    with StateDB() as db:
        for task in tasks:
            sources = []
            for url, gb in sorted(task_reads(task).items()):
                found = store_of_url(url)
                home = store_target(found.name) if found is not None else None
                if found is None or home is None:
                    continue  # a store no target calls its own (R2: no egress fees)
                record = get_storage(db, found.parse_url(url).bucket)
                region = record.region if record is not None else None
                sources.append(DataSource(url, home.name, region, gb))
            out.append(sources)
    return out
