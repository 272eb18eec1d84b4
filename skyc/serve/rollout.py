"""What each controller round launches, retires and puts in rotation, as the replicas
move to the service's latest version (``skyc serve update``) or, at other times, meet
the wanted count.

Replicas of the latest version are *new*, the others *old*. With no old replica this
is plain reconciling: launch up to the wanted count, scale the newest down past it.

``rolling`` (SkyPilot's default): new replicas are launched one at a time; each time
one is ready, an old one is retired, never leaving fewer ready replicas than wanted
(at least ``min_replicas``); ready replicas of both versions take traffic meanwhile.
``blue_green``: the new replicas are launched together while the old ones alone take
traffic; once as many new ones are ready as wanted, traffic switches to them and the
old ones are retired.

Old replicas that are not ready (starting, failing their probe) are retired at once:
they are replaced, not waited for. A retired replica leaves rotation and lets its
requests in flight finish before its cluster goes (the controller's ``tear``).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from skyc.serve.records import Replica

MODES = ("rolling", "blue_green")
DEFAULT_MODE = "rolling"
PENDING = ("PROVISIONING", "STARTING")


@dataclass(frozen=True)
class Plan:
    launch: int                # replicas of the latest version to launch now
    retire: list[Replica]      # old replicas to take out of rotation and tear down
    surplus: list[Replica]     # new replicas past the wanted count, to scale down
    updating: bool             # an old replica is still live


def plan(live: Sequence[Replica], version: int, want: int, mode: str | None,
         busy: Collection[int]) -> Plan:
    """This round's moves, given the live replicas and those with work in flight."""
    new = [r for r in live if r.version >= version]
    old = [r for r in live if r.version < version]
    launch = max(0, want - len(new))
    if old and mode != "blue_green":   # rolling: one new replica on its way at a time
        pending = sum(r.status in PENDING for r in new)
        launch = min(launch, max(0, 1 - pending))
    surplus = victims(new, len(new) - want, busy) if len(new) > want else []
    return Plan(launch, _retired(old, new, want, mode, busy), surplus, bool(old))


def _retired(old: list[Replica], new: list[Replica], want: int, mode: str | None,
             busy: Collection[int]) -> list[Replica]:
    idle = [r for r in old if r.id not in busy]
    unready = [r for r in idle if r.status in ("STARTING", "NOT_READY")]
    ready_old = sorted((r for r in idle if r.status == "READY"), key=lambda r: r.id)
    new_ready = sum(r.status == "READY" for r in new)
    if mode == "blue_green":
        return unready + ready_old if new_ready >= want else unready
    spare = new_ready + sum(r.status == "READY" for r in old) - want
    return unready + ready_old[:max(0, spare)]


def serving(replicas: Sequence[Replica], version: int, want: int,
            mode: str | None) -> list[Replica]:
    """The ready replicas that take traffic: all of them, except in a blue-green
    update, where the old ones do until enough new ones are ready."""
    ready = [r for r in replicas if r.status == "READY"]
    if mode != "blue_green":
        return ready
    new = [r for r in ready if r.version >= version]
    old = [r for r in ready if r.version < version]
    return old if old and len(new) < want else new


def victims(live: Sequence[Replica], count: int, busy: Collection[int]) -> list[Replica]:
    """The replicas to scale down: never one whose launch is in flight; those not
    ready first, then the newest."""
    order = {"STARTING": 0, "NOT_READY": 0, "READY": 1}
    idle = [r for r in live if r.id not in busy and r.status in order]
    idle.sort(key=lambda r: (order[r.status], -r.id))
    return idle[:count]
