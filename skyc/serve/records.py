"""What the serve store holds: services, their replicas and autoscaling decisions.

Service statuses (SkyPilot's): CONTROLLER_INIT (its controller is starting),
REPLICA_INIT (no replica ready yet), READY (at least one replica ready), NO_REPLICA
(scaled to zero), SHUTTING_DOWN (``serve down``), FAILED (launches kept failing),
CONTROLLER_FAILED (shown when its controller is not running).

Replica statuses: PROVISIONING, STARTING (its run started; probed after
``initial_delay_seconds`` at the latest), READY (in rotation), NOT_READY (failing its
probe: out of rotation), SHUTTING_DOWN, and the ends FAILED (setup failed or its
processes ended), FAILED_PROVISION, FAILED_INITIAL_DELAY (never ready in time),
FAILED_PROBING (failing its probe for too long).

Versions: ``serve up`` is version 1 of the service; each ``serve update`` records the
next, with its task, its config and how the replicas move to it (``update_mode``,
``rolling`` or ``blue_green``; None once no replica of an older version is live).
Each replica keeps the version it was launched with.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from skyc.state.service_claims import LIVE

FAILED = ("FAILED", "FAILED_PROVISION", "FAILED_INITIAL_DELAY", "FAILED_PROBING")


@dataclass
class Service:
    name: str
    status: str
    created_at: float
    port: int
    task_file: str
    cwd: str
    envs: dict[str, str]
    config: dict[str, Any]
    target: int
    down_requested: bool = False
    failure: str | None = None
    next_replica: int = 1
    version: int = 1
    update_mode: str | None = None


@dataclass
class Replica:
    service: str
    id: int
    cluster: str
    port: int
    status: str
    launched_at: float
    started_at: float | None = None
    ready_at: float | None = None
    job_id: int | None = None
    why: str | None = None
    log_tail: list[str] = field(default_factory=list)
    version: int = 1

    @property
    def live(self) -> bool:
        return self.status in LIVE


@dataclass(frozen=True)
class Decision:
    at: float
    before: int
    after: int
    reason: str
