"""Flatten a task's ``resources`` into concrete :class:`ResourceCandidate`s.

``any_of`` entries are alternatives of equal preference; ``ordered`` entries
are preferred in order. Inside each, an accelerator list is an ordered
preference and an accelerator set (``{A100: 8, H100: 8}``) is a set of equal
preference. ``preference`` is the rank of (resource entry, accelerator) in that
order, so 0 is the most preferred and equal numbers mean no preference.
"""

from __future__ import annotations

from typing import Any

from skyc.task.candidate import AcceleratorRequest, InfraSpec, ResourceCandidate
from skyc.task.resources import Resources, ResourcesEntry


def _merge(base: Resources, entry: ResourcesEntry) -> ResourcesEntry:
    """``entry``'s set fields over ``base``'s (both already validated)."""
    merged: dict[str, Any] = {}
    for key in ResourcesEntry.model_fields:
        value = getattr(entry, key)
        merged[key] = value if value is not None else getattr(base, key)
    return ResourcesEntry.model_construct(**merged)


def _accelerator_options(res: ResourcesEntry) -> list[tuple[int, AcceleratorRequest | None]]:
    acc = res.accelerators
    if acc is None:
        return [(0, None)]
    if acc.mode == "ordered":
        return list(enumerate(acc.items))
    return [(0, a) for a in acc.items]


def _candidate_fields(res: ResourcesEntry, acc: AcceleratorRequest | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "infra": res.infra or InfraSpec(),
        "accelerator": acc,
        "cpus": res.cpus,
        "memory": res.memory,
        "instance_type": res.instance_type,
        "use_spot": bool(res.use_spot),
        "disk_tier": res.disk_tier,
        "network_tier": res.network_tier,
        "ports": res.ports or (),
        "image_id": res.image_id,
        "labels": dict(res.labels or {}),
        "accelerator_args": dict(res.accelerator_args or {}),
    }
    if res.disk_size is not None:
        out["disk_size"] = res.disk_size
    return out


def expand_resources(resources: Resources) -> list[ResourceCandidate]:
    """Every concrete alternative of ``resources``, most preferred first."""
    if resources.any_of is not None:
        entries = [(0, _merge(resources, e)) for e in resources.any_of]
    elif resources.ordered is not None:
        entries = [(i, _merge(resources, e)) for i, e in enumerate(resources.ordered)]
    else:
        entries = [(0, ResourcesEntry.model_construct(**{
            k: getattr(resources, k) for k in ResourcesEntry.model_fields
        }))]
    keyed: list[tuple[tuple[int, int], dict[str, Any]]] = []
    for entry_rank, res in entries:
        for acc_rank, acc in _accelerator_options(res):
            keyed.append(((entry_rank, acc_rank), _candidate_fields(res, acc)))
    ranks = {key: i for i, key in enumerate(sorted({key for key, _ in keyed}))}
    keyed.sort(key=lambda item: ranks[item[0]])
    return [
        ResourceCandidate(index=i, preference=ranks[key], **fields)
        for i, (key, fields) in enumerate(keyed)
    ]
