"""Stopping and starting a cluster: its stack re-applied with the nodes powered off or on.

Disks are kept while stopped; the target's capabilities say whether its nodes can
stop at all (``stop_start``) and what their disks cost meanwhile (``disk_gb_month``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from skyc.apply.launch import LaunchReporter, end_cluster_jobs
from skyc.errors import SkycError, UnsupportedFeature

if TYPE_CHECKING:
    from skyc.model.nodes import ClusterInfo
    from skyc.state.database import ClusterRecord, StateDB


def stop_refusal(name: str, record: ClusterRecord) -> str | None:
    """Why cluster ``name`` cannot be stopped (None: it can), from its target's
    capabilities and its stack."""
    from skyc.apply.provision import can_stop, recorded_request
    from skyc.compiler import target

    caps = target(record.cloud).capabilities
    if not caps.creates_resources:
        return "its nodes are existing machines (an SSH pool) that skyc does not own"
    if not caps.stop_start:
        return f"{record.cloud} nodes cannot be stopped, only torn down"
    placement, candidate = recorded_request(name)
    if placement.use_spot:
        return "spot instances cannot be stopped (a one-time spot request only terminates)"
    if not can_stop(name, placement, candidate):
        return "its nodes cannot be stopped (e.g. TPU VMs are only created and deleted)"
    return None


def stop_cluster(name: str, reporter: LaunchReporter, lock_timeout: float = 600.0) -> bool:
    """Stop the cluster's nodes (disks kept) by re-applying its stack; False when it was
    stopped already. Its jobs are ended first."""
    from skyc.apply.provision import set_power
    from skyc.state.database import StateDB
    from skyc.state.locks import cluster_lock

    with StateDB() as db, cluster_lock(name, timeout=lock_timeout):
        record = _require_cluster(db, name)
        if record.status == "STOPPED":
            return False
        why = stop_refusal(name, record)
        if why is not None:
            raise UnsupportedFeature(f"cluster {name} cannot be stopped: {why}",
                                     hint=f"run `skyc destroy {name}` when done")
        reporter.stage("stop", name)
        end_cluster_jobs(name)
        set_power(name, "stopped", progress=reporter.engine_event)
        disks = stopped_hourly_cost(name, record)
        db.upsert_cluster(record.model_copy(update={"status": "STOPPED", "hourly_cost": disks}))
        db.add_event(name, "stop", f"cluster stopped (disks kept: ${disks:.4f}/hour)")
    return True


def start_cluster(name: str, reporter: LaunchReporter,
                  lock_timeout: float = 600.0) -> ClusterInfo | None:
    """Start a stopped cluster by re-applying its stack; its nodes (None: it was up)."""
    from skyc.apply.provision import recorded_request, set_power
    from skyc.state.database import StateDB
    from skyc.state.locks import cluster_lock

    with StateDB() as db, cluster_lock(name, timeout=lock_timeout):
        record = _require_cluster(db, name)
        if record.status != "STOPPED":
            return None
        reporter.stage("start", name)
        info = set_power(name, "running", progress=reporter.engine_event)
        assert info is not None
        db.mark_cluster_up(name, info, recorded_request(name)[0])
        db.add_event(name, "start", "cluster started")
    return info


def stopped_hourly_cost(name: str, record: ClusterRecord) -> float:
    """What the stopped cluster's disks still cost per hour (its target declares the
    price per GB-month)."""
    from skyc.apply.provision import recorded_request
    from skyc.compiler import target

    placement, candidate = recorded_request(name)
    per_gb = target(record.cloud).capabilities.disk_gb_month
    return placement.num_nodes * candidate.disk_size * per_gb / 730.0


def _require_cluster(db: StateDB, name: str) -> ClusterRecord:
    record = db.get_cluster(name)
    if record is None:
        raise SkycError(f"no cluster named '{name}'", hint="see your clusters with: skyc status")
    return record
