"""The networks clusters share, around the clusters' lives.

A target whose lowering builds a ``network_stack`` (AWS: a region's VPC, see
:mod:`skyc.compiler.aws.network`; GCP: a VPC network, :mod:`skyc.compiler.gcp.network`)
gets one network per region, a stack of its own in
``$SKYC_HOME/networks/<name>/``, recorded in the state (:mod:`skyc.state.networks`):

- made (or given a subnet in a new zone) by :func:`ensure_network` at the start of each
  provisioning attempt, under the network's own lock, before the cluster's stack is
  applied; its ids go into the cluster's workspace (``network.json``), the cluster's
  stack's inputs. A failed apply of the network is classified as the cluster's would
  be (``VpcLimitExceeded`` is the region's quota), so failover moves on, and what it
  made is destroyed when no cluster uses the network.
- destroyed by :func:`release_networks` with the last cluster that used it (a cluster no
  longer in the state does not count), unless ``provision.keep_network`` is set.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skyc.errors import ApplyFailed, SkycError
from skyc.model.workspace import NETWORK_FILE

if TYPE_CHECKING:
    from skyc.model.plan import Placement
    from skyc.settings.config import SkycConfig
    from skyc.stacks.engine import ProgressCallback
    from skyc.state.database import StateDB
    from skyc.state.networks import NetworkRecord

Say = Callable[[str, str], None]  # (stage, detail)
NETWORK_LOCK_TIMEOUT_S = 600.0


def network_workspace(name: str) -> Path:
    from skyc.settings.home import skyc_home

    return skyc_home() / "networks" / name


def network_for(cluster: str, placement: Placement) -> str | None:
    """The shared network the cluster's stack uses at ``placement``; None for a target
    without one, or a cluster that keeps its own network."""
    from skyc.compiler import has_shared_network, network_part
    from skyc.model.workspace import shares_network
    from skyc.stacks.workspace import cluster_workspace

    if not placement.region or not has_shared_network(placement.cloud):
        return None
    if not shares_network(cluster_workspace(cluster)):
        return None
    part = network_part(placement.cloud)
    return part.network_name(placement.region) if part is not None else None


def ensure_network(cluster: str, placement: Placement, config: SkycConfig, db: StateDB,
                   say: Say, progress: ProgressCallback | None = None) -> bool:
    """Before the cluster's stack is applied at ``placement``: its network exists with a
    subnet in the placement's zone, the cluster among its users, and its ids in the
    cluster's workspace. Whether those ids changed (a plan made before holds others)."""
    from skyc.compiler import network_part
    from skyc.model.owner import owner
    from skyc.state.locks import cluster_lock
    from skyc.state.networks import NetworkRecord, add_network_user, get_network

    name = network_for(cluster, placement)
    part = network_part(placement.cloud)
    if name is None or part is None or placement.region is None:
        return False
    with cluster_lock(name, timeout=NETWORK_LOCK_TIMEOUT_S):
        record = get_network(db, name)
        if record is None:
            record = NetworkRecord(name=name, cloud=placement.cloud, region=placement.region,
                                   owner=owner(config))
        add_network_user(db, name, cluster)  # kept from a release while it is applied
        if record.status != "READY" or placement.zone not in record.zones:
            outputs = _apply_network(record, cluster, placement, config, db, say, progress)
        else:
            outputs = record.outputs
    inputs = part.network_inputs(outputs, placement.zone)
    return _write_inputs(cluster, inputs)


def _apply_network(record: NetworkRecord, cluster: str, placement: Placement,
                   config: SkycConfig, db: StateDB, say: Say,
                   progress: ProgressCallback | None) -> dict[str, Any]:
    """Apply the network's stack with the placement's zone added; its outputs."""
    from skyc.compiler import network_part
    from skyc.state.networks import add_network_user, put_network

    part = network_part(placement.cloud)
    assert part is not None and record.owner is not None
    new = record.status == "CREATING" and not record.outputs
    zones = [*record.zones, *([] if placement.zone in record.zones else [placement.zone])]
    stack = part.network_stack(record.region, zones, record.owner, config)
    workspace = network_workspace(record.name)
    engine = _write(stack, workspace, config, record.engine,
                    part.network_values(stack, workspace))
    before = record
    record = record.model_copy(update={"status": "CREATING", "zones": zones,
                                       "workspace": str(workspace), "engine": engine})
    put_network(db, record)
    add_network_user(db, record.name, cluster)
    where = f"{placement.region}" + (f", zone {placement.zone}" if placement.zone else "")
    say("network", f"{'creating' if new else 'updating'} {record.name} ({where}; shared "
        "by the clusters skyc places there)")
    from skyc.stacks.registry import open_engine

    driver = open_engine(engine, workspace)
    try:
        diff = driver.plan()
        if diff.has_changes:
            driver.apply(diff, progress)
        outputs = driver.outputs()
    except ApplyFailed as exc:
        _failed(before, cluster, placement, db, say, progress)
        from skyc.apply.provision import classified

        raise classified(exc, placement) from None
    put_network(db, record.model_copy(update={"status": "READY", "outputs": outputs}))
    return outputs


def _failed(before: NetworkRecord, cluster: str, placement: Placement, db: StateDB,
            say: Say, progress: ProgressCallback | None) -> None:
    """After a failed apply of the network: with no other cluster using it, what it made
    is destroyed and it is forgotten; else it stays as it was."""
    from skyc.state.networks import get_network, live_users, put_network, remove_network_user

    remove_network_user(db, before.name, cluster)
    record = get_network(db, before.name)
    if record is not None and live_users(db, record):
        put_network(db, record.model_copy(update={
            "status": before.status if before.outputs else "FAILED",
            "zones": before.zones}))
        return
    say("network", f"removing what the failed apply of {before.name} made")
    try:
        _destroy(before, db, progress)
    except SkycError as exc:
        say("network", f"{before.name} could not be removed ({exc.message}); the next "
            f"apply in {placement.region} tries again")


def _write(stack: Any, workspace: Path, config: SkycConfig, engine: str | None,
           values: dict[str, Any]) -> str:
    from skyc.compiler import choose_engine
    from skyc.stacks.registry import open_engine, stack_engine, write_stack

    name = engine or stack_engine(workspace) or choose_engine(stack.cloud, None, config)
    driver = open_engine(name, workspace)
    workspace.mkdir(parents=True, exist_ok=True)
    write_stack(stack, workspace, values, engine=name)
    driver.prepare(stack)
    return name


def _write_inputs(cluster: str, inputs: dict[str, str]) -> bool:
    from skyc.stacks.workspace import cluster_workspace

    workspace = cluster_workspace(cluster)
    workspace.mkdir(parents=True, exist_ok=True)
    path = workspace / NETWORK_FILE
    text = json.dumps(inputs, indent=2, sort_keys=True) + "\n"
    before = path.read_text() if path.exists() else None
    if before != text:
        path.write_text(text)
    return before != text


def network_note(cluster: str, placement: Placement) -> str | None:
    """What applying the cluster at ``placement`` does to its shared network, in words
    (None: it uses the network as it is, or has none)."""
    from skyc.state.database import existing_state
    from skyc.state.networks import get_network

    name = network_for(cluster, placement)
    if name is None:
        return None
    state = existing_state()
    record = None
    if state is not None:
        with state as db:
            record = get_network(db, name)
    zone = f" with a subnet in {placement.zone}" if placement.zone else ""
    if record is None or (record.status != "READY" and not record.outputs):
        return (f"the region's network {name} (its VPC{zone}) is created first, shared "
                "by the clusters skyc places there; its ids are this stack's vpc_id and "
                "subnet_id")
    if placement.zone not in record.zones:
        return f"the region's network {name} gets a subnet in {placement.zone or 'any zone'}"
    return None


def seed_inputs(cluster: str, placement: Placement, workspace: Path, db: StateDB) -> None:
    """A throwaway workspace for a plan of a cluster made elsewhere: its network's ids as
    the state records them (nothing when it has no network yet)."""
    from skyc.compiler import network_part
    from skyc.state.networks import get_network

    name, part = network_for(cluster, placement), network_part(placement.cloud)
    record = get_network(db, name) if name is not None else None
    if (record is None or part is None or record.status != "READY"
            or placement.zone not in record.zones):
        return
    inputs = part.network_inputs(record.outputs, placement.zone)
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / NETWORK_FILE).write_text(json.dumps(inputs, indent=2, sort_keys=True) + "\n")


def release_networks(cluster: str, db: StateDB, say: Say,
                     progress: ProgressCallback | None = None, *,
                     keep: str | None = None) -> list[str]:
    """After the cluster's resources are gone (destroyed, or moved to ``keep``'s region):
    it no longer uses its networks; those no cluster uses are destroyed, unless the
    config keeps them. The names destroyed."""
    from skyc.settings.config import load_config
    from skyc.state.locks import cluster_lock
    from skyc.state.networks import get_network, live_users, networks_of, remove_network_user

    gone = []
    keep_all = load_config().provision.keep_network
    for record in networks_of(db, cluster):
        if record.name == keep:
            continue
        with cluster_lock(record.name, timeout=NETWORK_LOCK_TIMEOUT_S):
            remove_network_user(db, record.name, cluster)
            now = get_network(db, record.name)
            if now is None:
                continue
            others = [u for u in live_users(db, now) if u != cluster]
            if others or keep_all:
                continue
            say("network", f"removing {record.name} (no cluster uses it any more)")
            _destroy(now, db, progress)
            gone.append(record.name)
    return gone


def _destroy(record: NetworkRecord, db: StateDB, progress: ProgressCallback | None
             ) -> None:
    """Destroy the network's stack and forget it (the caller holds its lock)."""
    from skyc.apply.provision import destroy_stack
    from skyc.stacks.registry import open_engine, stack_engine
    from skyc.state.networks import put_network, remove_network

    workspace = network_workspace(record.name)
    engine = stack_engine(workspace)
    if engine is not None:
        put_network(db, record.model_copy(update={"status": "DELETING"}))
        destroy_stack(record.cloud, open_engine(engine, workspace), progress)
    remove_network(db, record.name)
    if workspace.is_dir():
        shutil.rmtree(workspace)
