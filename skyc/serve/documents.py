"""What ``skyc serve status`` shows of each service (``--format json`` prints it as is).

``format_version`` 1.1 added ``version`` (the latest, as ``serve update`` recorded
it), ``active_versions`` (those of the live replicas, more than one during an
update), ``update_mode`` (``rolling`` or ``blue_green`` while an update goes on,
else null) and ``tls`` per service, and ``version`` per replica; an endpoint with TLS
is ``https://``.
"""

from __future__ import annotations

import time
from typing import Any

from skyc.serve.daemon import controller_pid
from skyc.serve.names import endpoint
from skyc.serve.records import Replica, Service
from skyc.serve.spec import ServiceConfig
from skyc.serve.store import ServeStore

FORMAT_VERSION = "1.1"
DECISIONS_SHOWN = 20


def service_status(service: Service, pid: int | None) -> str:
    """The recorded status, or CONTROLLER_FAILED when no controller runs for it."""
    if pid is None and service.status not in ("SHUTTING_DOWN",):
        return "CONTROLLER_FAILED"
    return service.status


def replica_doc(r: Replica) -> dict[str, Any]:
    return {"id": r.id, "cluster": r.cluster, "status": r.status,
            "endpoint": endpoint(r.port), "port": r.port, "launched_at": r.launched_at,
            "ready_at": r.ready_at, "job_id": r.job_id, "why": r.why, "log_tail": r.log_tail,
            "version": r.version}


def service_doc(store: ServeStore, service: Service, now: float | None = None) -> dict[str, Any]:
    now = time.time() if now is None else now
    pid = controller_pid(service.name)
    config = ServiceConfig.load(service.config)
    reps = store.replicas(service.name)
    return {
        "name": service.name,
        "status": service_status(service, pid),
        "endpoint": endpoint(service.port, config.tls is not None),
        "tls": config.tls is not None,
        "version": service.version,
        "active_versions": sorted({r.version for r in reps if r.live}),
        "update_mode": service.update_mode,
        "created_at": service.created_at,
        "uptime_s": round(now - service.created_at, 1),
        "controller_pid": pid,
        "failure": service.failure,
        "policy": config.policy,
        "readiness_probe": config.readiness.describe(),
        "replica_policy": config.scaling.describe(),
        "target_replicas": service.target,
        "ready_replicas": sum(r.status == "READY" for r in reps),
        "replicas": [replica_doc(r) for r in reps],
        "decisions": [{"at": d.at, "from": d.before, "to": d.after, "reason": d.reason}
                      for d in store.decisions(service.name, DECISIONS_SHOWN)],
    }


def status_document(names: list[str]) -> dict[str, Any]:
    """Every service (or those named; an unknown name is a ConfigError)."""
    from skyc.serve.service import require
    from skyc.state.service_claims import db_path

    if not db_path().exists() and not names:
        return {"format_version": FORMAT_VERSION, "services": []}
    with ServeStore() as store:
        services = [require(store, n) for n in names] if names else store.services()
        return {"format_version": FORMAT_VERSION,
                "services": [service_doc(store, s) for s in services]}
