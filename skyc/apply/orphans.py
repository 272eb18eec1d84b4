"""Cluster workspaces the state database has no record of (a lost, emptied or restored
``state.db``): finding them, and recording one again from what its workspace holds.

A workspace that holds a stack is a cluster whether or not the state remembers it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from skyc.model.workspace import NAME, cluster_workspace
from skyc.settings.home import skyc_home
from skyc.stacks.registry import stack_engine

if TYPE_CHECKING:
    from skyc.model.nodes import ClusterInfo
    from skyc.state.database import ClusterRecord, ClusterStatus, StateDB


class Orphan(NamedTuple):
    """A cluster workspace that the state database has no record of."""

    name: str
    workspace: Path
    engine: str             # its stack's engine
    cloud: str | None       # from cluster.json, when the cluster was provisioned
    nodes: int              # the nodes cluster.json lists


def _read_json(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def orphan_workspaces(known: Iterable[str]) -> list[Orphan]:
    """The workspaces under ``$SKYC_HOME/clusters/`` that hold a stack but are none of
    ``known`` (the recorded clusters' names). One whose lock is held (an apply or a
    destroy at work) is left out."""
    from skyc.model.nodes import CLUSTER_FILE
    from skyc.state.locks import lock_held

    names = set(known)
    try:
        entries = sorted((skyc_home() / "clusters").iterdir())
    except OSError:
        return []
    found = []
    for workspace in entries:
        if workspace.name in names or not NAME.match(workspace.name) \
                or workspace.is_symlink() or not workspace.is_dir():
            continue
        engine = stack_engine(workspace)
        if engine is None or lock_held(workspace.name):
            continue
        info = _read_json(workspace / CLUSTER_FILE)
        cloud = info.get("cloud")
        found.append(Orphan(workspace.name, workspace, engine,
                            cloud if isinstance(cloud, str) else None,
                            len(info.get("nodes") or [])))
    return found


def adopt_workspace(db: StateDB, name: str, lock_timeout: float = 60.0) -> ClusterRecord:
    """Record cluster ``name`` again from its workspace: its stack's engine, and the
    nodes and placement of its last apply; status UP (STOPPED when its nodes were
    stopped, INIT when it was never provisioned). ``skyc status --refresh`` then
    checks it against the engine and the nodes."""
    from skyc.errors import StateError
    from skyc.model.workspace import recorded_cluster
    from skyc.state.locks import cluster_lock

    workspace = cluster_workspace(name)
    with cluster_lock(name, timeout=lock_timeout):
        if db.get_cluster(name) is not None:
            raise StateError(f"cluster '{name}' is recorded already",
                             hint=f"see it with: skyc status {name}")
        engine = stack_engine(workspace)
        if engine is None:
            raise StateError(f"nothing to adopt: {workspace} holds no stack",
                             hint="`skyc status` lists the workspaces that can be adopted")
        record = _adopted_record(name, workspace, engine, recorded_cluster(name))
        db.upsert_cluster(record)
        db.add_event(name, "adopt", f"recorded again from its workspace {workspace} "
                     f"({record.status})")
    return record


def _adopted_record(name: str, workspace: Path, engine: str,
                    info: ClusterInfo | None) -> ClusterRecord:
    from skyc.apply.provision import POWER_FILE, REQUEST_FILE
    from skyc.errors import StateError
    from skyc.model.nodes import CLUSTER_FILE
    from skyc.state.database import ClusterRecord

    placement = _read_json(workspace / REQUEST_FILE).get("placement") or {}
    cloud = info.cloud if info is not None else placement.get("cloud")
    if not cloud:
        raise StateError(f"{workspace}: no record of its nodes or its placement tells "
                         "which cloud the cluster is on",
                         hint=f"destroy what its stack created with: skyc down {name}")
    try:
        power = (workspace / POWER_FILE).read_text().strip()
    except OSError:
        power = ""
    status: ClusterStatus = ("STOPPED" if power == "stopped"
                             else "UP" if info is not None and info.nodes else "INIT")
    return ClusterRecord(
        name=name, status=status, cloud=cloud,
        region=info.region if info is not None else placement.get("region"),
        zone=info.zone if info is not None else placement.get("zone"),
        placement=placement, workspace=str(workspace), engine=engine,
        nodes=[n.model_dump(mode="json", exclude_none=True) for n in info.nodes]
        if info is not None else [],
        launched_at=_mtime(workspace / CLUSTER_FILE) if info is not None else None,
        hourly_cost=float(placement.get("hourly_cost") or 0.0),
    )


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except OSError:
        return None
