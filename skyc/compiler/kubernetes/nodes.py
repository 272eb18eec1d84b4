"""A cluster's node list (``kubectl get nodes -o json``) as offers, one per node shape.

A node offers its allocatable accelerators (``nvidia.com/gpu``, ``amd.com/gpu``,
``google.com/tpu``), CPU and memory; its model comes from its labels (see
:mod:`labels`). Nodes of one shape (model, count, architecture, capacity type,
instance type) make one offer whose ``max_nodes`` is how many there are, sized by
the smallest of them. The region of every offer is the context's name, so
``infra: kubernetes/CONTEXT`` selects it and a capacity error blocks it.

A TPU offer is a slice, as in the cloud catalog: ``tpu-v5litepod-16`` count 1,
``max_nodes`` the number of whole slices among the nodes of a node pool; its
vCPUs and memory are one host's.

Skipped, with a note saying why: cordoned or not-Ready nodes, nodes with a
taint the pods would not tolerate, and accelerators whose model no label names.
Prices are 0 unless a chargeback price per GPU-hour is given.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from skyc.catalog.offer import Offer
from skyc.compiler.kubernetes import labels as L
from skyc.compiler.kubernetes.quantity import gib, parse_quantity

CLOUD = "kubernetes"
DEVICE_RESOURCES = ("nvidia.com/gpu", "amd.com/gpu", "google.com/tpu")
# Taints the pods tolerate: the ones GPU/TPU node pools and spot pools carry.
TOLERATED_TAINTS = (
    "nvidia.com/gpu", "amd.com/gpu", "google.com/tpu", "cloud.google.com/gke-spot",
    "cloud.google.com/gke-preemptible", "kubernetes.azure.com/scalesetpriority",
    "karpenter.sh/capacity-type", "sku",
)
_SPOT_LABELS = {
    "cloud.google.com/gke-spot": "true", "cloud.google.com/gke-preemptible": "true",
    "karpenter.sh/capacity-type": "spot", "eks.amazonaws.com/capacityType": "spot",
    "kubernetes.azure.com/scalesetpriority": "spot",
}
_POOL_LABELS = ("cloud.google.com/gke-nodepool", "eks.amazonaws.com/nodegroup",
                "karpenter.sh/nodepool", "kubernetes.azure.com/agentpool")
_ARCH = {"amd64": "x86_64", "arm64": "arm64"}


@dataclass(frozen=True)
class NodeShape:
    """What one usable node offers."""

    name: str
    accelerator: str | None
    accelerator_count: float
    accelerator_memory_gib: float | None
    vcpus: float | None
    memory_gib: float | None
    arch: str | None
    spot: bool
    instance_type: str | None
    pool: str | None
    tpu_hosts: int = 1          # hosts per TPU slice (1 for GPUs and CPU nodes)
    chips: float = 0            # accelerators a price per GPU-hour counts (a slice's chips)


@dataclass(frozen=True)
class ContextOffers:
    """What one context offers, where that came from, and what was left out and why."""

    context: str
    offers: list[Offer]
    notes: list[str]
    source: str                 # "cluster" (read, maybe cached) or "config" (pools)
    read_at: str | None = None  # when the nodes were read (ISO 8601, UTC)


def _blocking_taints(spec: Mapping[str, Any]) -> list[str]:
    out = []
    for taint in spec.get("taints") or []:
        effect = taint.get("effect")
        if effect in ("NoSchedule", "NoExecute") and taint.get("key") not in TOLERATED_TAINTS:
            out.append(f"{taint.get('key')}={taint.get('value', '')}:{effect}")
    return out


def _ready(status: Mapping[str, Any]) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in status.get("conditions") or [])


def _devices(allocatable: Mapping[str, Any]) -> tuple[str | None, float]:
    for resource in DEVICE_RESOURCES:
        count = parse_quantity(allocatable.get(resource))
        if count:
            return resource, count
    return None, 0.0


def node_shape(node: Mapping[str, Any], accelerator_label: str | None = None
               ) -> NodeShape | str:
    """The node's shape, or why it offers nothing."""
    meta, spec, status = node.get("metadata", {}), node.get("spec", {}), node.get("status", {})
    name = str(meta.get("name", "?"))
    labels: dict[str, str] = meta.get("labels") or {}
    if spec.get("unschedulable"):
        return f"node {name}: cordoned (unschedulable)"
    if not _ready(status):
        return f"node {name}: not Ready"
    taints = _blocking_taints(spec)
    if taints:
        return (f"node {name}: tainted {', '.join(taints)}; add a toleration in "
                "kubernetes.pod_config to use it")
    allocatable = status.get("allocatable") or {}
    resource, count = _devices(allocatable)
    model = L.accelerator_from_labels(labels, accelerator_label) if resource else None
    if resource and model is None and "-MIG-" in labels.get(L.GPU_PRODUCT, "").upper():
        return (f"node {name}: {count:g} {resource} are MIG slices ({labels.get(L.GPU_PRODUCT)}), "
                "not whole GPUs; not offered")
    if resource and model is None:
        hint = f"kubernetes.accelerator_label ({accelerator_label})" if accelerator_label else (
            "a label naming the model (e.g. nvidia.com/gpu.product from GPU feature "
            "discovery) or kubernetes.accelerator_label")
        return f"node {name}: {count:g} {resource} of an unknown model; needs {hint}"
    tpu_hosts, acc_count, chips = 1, count, count
    if resource == "google.com/tpu":
        chips = float(L.tpu_chips(labels.get(L.GKE_TPU_TOPOLOGY)) or count)
        tpu_hosts, acc_count = max(1, int(chips // count)), 1
    spot = any(labels.get(k, "").lower() == v for k, v in _SPOT_LABELS.items())
    return NodeShape(
        name=name, accelerator=model, accelerator_count=acc_count if model else 0,
        accelerator_memory_gib=L.accelerator_memory_gib(model, labels) if model else None,
        vcpus=_cores(allocatable.get("cpu")), memory_gib=gib(allocatable.get("memory")),
        arch=_ARCH.get(labels.get("kubernetes.io/arch", ""), labels.get("kubernetes.io/arch")),
        spot=spot,
        instance_type=labels.get("node.kubernetes.io/instance-type")
        or labels.get("beta.kubernetes.io/instance-type"),
        pool=next((labels[k] for k in _POOL_LABELS if labels.get(k)), None),
        tpu_hosts=tpu_hosts, chips=chips if model else 0,
    )


def _cores(value: Any) -> float | None:
    cores = parse_quantity(value)
    return None if cores is None else round(cores, 3)


def _min(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return min(known) if known else None


def offers_from_shapes(context: str, shapes: list[NodeShape],
                       prices: Mapping[str | None, float]) -> tuple[list[Offer], list[str]]:
    """One offer per group of identical nodes, and notes on TPU hosts left over.

    ``prices``: accelerator -> $/GPU-hour (the ``None`` key applies to every
    accelerator without its own)."""
    groups: dict[tuple[Any, ...], list[NodeShape]] = {}
    for s in shapes:
        key = (s.accelerator or "", s.accelerator_count, s.arch or "", s.spot,
               s.instance_type or "", s.pool if s.tpu_hosts > 1 else "")
        groups.setdefault(key, []).append(s)
    offers, notes = [], []
    for key in sorted(groups):
        group = groups[key]
        first = group[0]
        if len(group) % first.tpu_hosts:
            notes.append(f"node pool {first.pool}: {len(group)} hosts of {first.accelerator} "
                         f"({first.tpu_hosts} per slice): {len(group) % first.tpu_hosts} left "
                         "over, not a whole slice")
        per_gpu = prices.get(first.accelerator, prices.get(None, 0.0)) if first.accelerator else 0.0
        price = round(per_gpu * first.chips, 6)
        offers.append(Offer(
            cloud=CLOUD, region=context, zone=None, instance_type=None,
            accelerator=first.accelerator, accelerator_count=first.accelerator_count,
            accelerator_memory_gib=_min(s.accelerator_memory_gib for s in group),
            vcpus=_min(s.vcpus for s in group), memory_gib=_min(s.memory_gib for s in group),
            price=None if first.spot else price, spot_price=price if first.spot else None,
            arch=first.arch, elastic=False, max_nodes=len(group) // first.tpu_hosts,
        ))
    return [o for o in offers if o.max_nodes], notes


def node_list_offers(context: str, node_list: Mapping[str, Any], *,
                     accelerator_label: str | None = None,
                     prices: Mapping[str | None, float] | None = None,
                     read_at: str | None = None) -> ContextOffers:
    """Offers of a context from its node list (the JSON ``kubectl get nodes -o json`` prints)."""
    shapes: list[NodeShape] = []
    notes: list[str] = []
    for node in node_list.get("items") or []:
        shape = node_shape(node, accelerator_label)
        if isinstance(shape, str):
            notes.append(shape)
        else:
            shapes.append(shape)
    offers, more = offers_from_shapes(context, shapes, prices or {})
    return ContextOffers(context, offers, sorted(notes + more), "cluster", read_at)
