"""Digests of a plan's inputs: task files, config, catalog, stacks, a cluster's state.

Each is ``sha256:<hex>`` of canonical bytes (JSON with sorted keys), so the same
input always gives the same digest, wherever it is computed.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skyc.model.plan import Plan
    from skyc.settings.config import SkycConfig
    from skyc.task.reading import Bounds

_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


def of_bytes(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def of_data(value: Any) -> str:
    return of_bytes(json.dumps(value, sort_keys=True, separators=(",", ":")).encode())


def well_formed(digest: str) -> bool:
    """Whether ``digest`` is ``sha256:`` and 64 lowercase hex digits."""
    return _DIGEST.fullmatch(digest) is not None


def of_file(path: Path, bounds: Bounds | None = None) -> str:
    """The digest of a file read as skyc reads it (``bounds``: a task file's, unless
    given): a FIFO, a device or an oversize file is that reader's error."""
    from skyc.task.reading import TASK, read_bytes

    return of_bytes(read_bytes(path, str(path), bounds or TASK))


def of_config(config: SkycConfig) -> str:
    return of_data(config.model_dump(mode="json"))


def of_catalog(plan: Plan) -> str:
    """The catalog as this plan saw it: its source and date, and every offer the plan
    chose or ranked (a price or an offer that moved changes it)."""
    return of_data({
        "catalog": None if plan.catalog is None else plan.catalog.model_dump(mode="json"),
        "tasks": [[p.model_dump(mode="json") for p in (t.placement, *t.alternatives)]
                  for t in plan.tasks],
    })


def of_stack(files: dict[str, str]) -> str:
    """A stack as its engine's emitter writes it (input values, such as the SSH key,
    are variables: not part of it)."""
    return of_data(files)


def of_cluster_state(cluster: str) -> str:
    """What the state knows of the cluster: its record and its recorded nodes
    (``absent`` for a cluster skyc has never applied)."""
    from skyc.stacks.workspace import cluster_workspace

    record: dict[str, Any] | None = None
    from skyc.state.database import existing_state

    state = existing_state()
    if state is not None:
        with state as db:
            found = db.get_cluster(cluster)
        if found is not None:
            record = {k: found.model_dump(mode="json").get(k)
                      for k in ("status", "cloud", "region", "zone", "placement",
                                "launched_at", "engine", "nodes")}
    nodes = cluster_workspace(cluster) / "cluster.json"
    if record is None and not nodes.exists():
        return "absent"
    from skyc.task.inputs import STATE

    return of_data({"record": record,
                    "nodes": of_file(nodes, STATE) if nodes.exists() else None})
