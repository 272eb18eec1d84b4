"""A pod's status and events (``kubectl get pod -o json``, ``kubectl get events -o
json``) as neutral diagnostics, for :func:`errors.classify`.

What becomes a diagnostic: the pod's ``PodScheduled=False`` condition (the
scheduler's reason), every container waiting for a reason other than starting
up (``ErrImagePull``, ``ImagePullBackOff``, ``CreateContainerConfigError``), a
failed pod's reason (``UnexpectedAdmissionError``, ``OutOfnvidia.com/gpu``),
every Warning event about the pod (``core/v1`` and ``events.k8s.io/v1`` shapes),
and a pod still unscheduled past ``pending_timeout`` seconds.

With ``pending_timeout``, a pod's scheduling failures count only once it has
waited that long: a cluster autoscaler (Karpenter, GKE's) answers
``FailedScheduling`` by adding a node, so before the timeout it is not final.
Failures no wait can fix (image pulls, container config) count at once.
``event_diagnostics`` reads the events of any object, e.g. a StatefulSet's or
Job's ``FailedCreate`` (an exhausted ResourceQuota refuses its pods there).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping, Sequence
from typing import Any

from skyc.model.diagnostics import Diagnostic

ENGINE = "kubernetes"
_STARTING = {"ContainerCreating", "PodInitializing"}


def _time(value: Any) -> _dt.datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return _dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _event_items(events: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> list[Any]:
    if isinstance(events, Mapping):
        return list(events.get("items") or [])
    return list(events)


def _about(event: Mapping[str, Any], kind: str, name: str) -> bool:
    obj = event.get("involvedObject") or event.get("regarding") or {}
    return bool(obj.get("kind") == kind and obj.get("name") == name)


def _warnings(events: Mapping[str, Any] | Sequence[Mapping[str, Any]], kind: str, name: str
              ) -> list[tuple[str, str]]:
    return [(str(e.get("reason", "Warning")), str(e.get("message") or e.get("note") or ""))
            for e in _event_items(events) if e.get("type") == "Warning" and _about(e, kind, name)]


def _dedupe(found: Sequence[tuple[str, str]], address: str) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    seen: set[tuple[str, str]] = set()
    for reason, message in found:
        if (reason, message) not in seen:
            seen.add((reason, message))
            out.append(Diagnostic(engine=ENGINE, summary=f"{reason}: {message}".strip(),
                                  address=address))
    return out


def event_diagnostics(events: Mapping[str, Any] | Sequence[Mapping[str, Any]], kind: str,
                      name: str, namespace: str = "default") -> list[Diagnostic]:
    """Diagnostics of the Warning events about one object (``kind``/``name``)."""
    return _dedupe(_warnings(events, kind, name), f"{kind.lower()}/{namespace}/{name}")


def _scheduled(status: Mapping[str, Any]) -> bool:
    return any(c.get("type") == "PodScheduled" and c.get("status") == "True"
               for c in status.get("conditions") or [])


def pod_diagnostics(pod: Mapping[str, Any],
                    events: Mapping[str, Any] | Sequence[Mapping[str, Any]] = (), *,
                    now: _dt.datetime | None = None,
                    pending_timeout: float | None = None) -> list[Diagnostic]:
    """Diagnostics of one pod, in a stable order, without repeats."""
    meta, status = pod.get("metadata", {}), pod.get("status", {})
    name = str(meta.get("name", "?"))
    scheduling: list[tuple[str, str]] = []
    immediate: list[tuple[str, str]] = []
    for cond in status.get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
            scheduling.append((str(cond.get("reason") or "Unschedulable"),
                               str(cond.get("message", ""))))
    for key in ("initContainerStatuses", "containerStatuses"):
        for cs in status.get(key) or []:
            waiting = (cs.get("state") or {}).get("waiting") or {}
            reason = waiting.get("reason")
            if reason and reason not in _STARTING:
                immediate.append((str(reason), f"container {cs.get('name')}: "
                                           f"{waiting.get('message', '')}"))
    if status.get("phase") == "Failed" and status.get("reason"):
        immediate.append((str(status["reason"]), str(status.get("message", ""))))
    for reason, message in _warnings(events, "Pod", name):
        (scheduling if reason == "FailedScheduling" else immediate).append((reason, message))
    created = _time(meta.get("creationTimestamp"))
    waiting_pod = status.get("phase") == "Pending" and not _scheduled(status)
    if pending_timeout is not None and waiting_pod:
        age = ((now or _dt.datetime.now(_dt.timezone.utc)) - created).total_seconds() \
            if created is not None else 0.0
        if age <= pending_timeout:
            scheduling = []
        else:
            scheduling.append(("PendingTimeout",
                               f"pod {name} not scheduled after {age:.0f} s "
                               f"(kubernetes.pending_timeout: {pending_timeout:g} s)"))
    address = f"pod/{meta.get('namespace', 'default')}/{name}"
    return _dedupe(immediate + scheduling, address)
