"""Where a pod may run: the device resource it requests, node affinity from the
accelerator's model label, tolerations, and TPU slice shapes.

Clusters name a GPU model in different labels (see :mod:`labels`), each with its
own spelling of the model. The pod's node affinity has one term per labelling
scheme (terms are OR'ed), each listing the label values known to mean the
model: the values are kept only if :func:`labels.gpu_model` reads them back as
that model, so the parser and the selectors cannot disagree. A label named by
``kubernetes.accelerator_label`` gets a term of its own with the same values
and the model's own name.

Spot (``use_spot: true``): the offer came from nodes labelled as spot, so the
pod selects spot capacity the way the common autoscalers label it, paired with
the accelerator label of the same platform: GKE ``cloud.google.com/gke-spot=true``,
Karpenter ``karpenter.sh/capacity-type=spot``, EKS managed node groups
``eks.amazonaws.com/capacityType=SPOT``, AKS ``kubernetes.azure.com/scalesetpriority=spot``;
and tolerates the taints those pools carry.

TPU slices (GKE): a slice ``tpu-v5litepod-16`` is 16 chips in topology ``4x4``;
single-host topologies of v5e/v6e hold up to 8 chips on one host, every other
slice has 4 chips per host. The pods of a slice (one per host) select the
slice's accelerator and topology labels and request ``google.com/tpu`` chips
per host.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from skyc.compiler.kubernetes import labels as L
from skyc.errors import UnsupportedFeature

NVIDIA = "nvidia.com/gpu"
AMD = "amd.com/gpu"
TPU = "google.com/tpu"

# Label values seen in the wild, per labelling scheme; filtered per model by
# labels.gpu_model, so an entry that does not parse back is harmless.
KNOWN_VALUES: dict[str, tuple[str, ...]] = {
    L.GKE_ACCELERATOR: (
        "nvidia-l4", "nvidia-tesla-t4", "nvidia-tesla-v100", "nvidia-tesla-p100",
        "nvidia-tesla-p4", "nvidia-tesla-a100", "nvidia-a100-80gb", "nvidia-h100-80gb",
        "nvidia-h100-mega-80gb", "nvidia-h200-141gb", "nvidia-b200", "nvidia-gb200",
        "nvidia-rtx-pro-6000",
    ),
    L.KARPENTER_GPU: (
        "t4", "t4g", "a10g", "l4", "l40s", "v100", "a100", "h100", "h200", "b200",
    ),
    L.GPU_PRODUCT: (
        "Tesla-T4", "Tesla-V100-SXM2-16GB", "Tesla-V100-SXM2-32GB", "NVIDIA-A10",
        "NVIDIA-A10G", "NVIDIA-L4", "NVIDIA-L40S", "NVIDIA-L40", "NVIDIA-A100-SXM4-40GB",
        "NVIDIA-A100-PCIE-40GB", "NVIDIA-A100-SXM4-80GB", "NVIDIA-A100-80GB-PCIe",
        "NVIDIA-H100-80GB-HBM3", "NVIDIA-H100-PCIe", "NVIDIA-H100-NVL",
        "NVIDIA-H200", "NVIDIA-H200-141GB-HBM3e", "NVIDIA-B200", "NVIDIA-GB200",
        "NVIDIA-RTX-A6000", "NVIDIA-RTX-6000-Ada-Generation",
    ),
    L.AMD_PRODUCT: (
        "AMD_Instinct_MI300X_OAM", "AMD_Instinct_MI300X", "AMD_Instinct_MI325X_OAM",
        "AMD_Instinct_MI250X_MI250", "AMD_Instinct_MI250X", "AMD_Instinct_MI210",
    ),
}
# The spot label of the platform each scheme comes from (None: any platform).
_PLATFORM_SPOT: dict[str, tuple[tuple[str, str], ...]] = {
    L.GKE_ACCELERATOR: (("cloud.google.com/gke-spot", "true"),),
    L.GKE_TPU: (("cloud.google.com/gke-spot", "true"),),
    L.KARPENTER_GPU: (("karpenter.sh/capacity-type", "spot"),),
}
SPOT_LABELS: tuple[tuple[str, str], ...] = (
    ("cloud.google.com/gke-spot", "true"),
    ("karpenter.sh/capacity-type", "spot"),
    ("eks.amazonaws.com/capacityType", "SPOT"),
    ("kubernetes.azure.com/scalesetpriority", "spot"),
)
SPOT_TAINTS = ("cloud.google.com/gke-spot", "karpenter.sh/capacity-type",
               "kubernetes.azure.com/scalesetpriority")

# Catalog TPU generation -> GKE's accelerator label value, chips per host of a
# multi-host slice, the largest single-host slice, and the topology's rank.
_TPU: dict[str, tuple[str, int, int, int]] = {
    "v4": ("tpu-v4-podslice", 4, 4, 3),
    "v5p": ("tpu-v5p-slice", 4, 4, 3),
    "v5litepod": ("tpu-v5-lite-podslice", 4, 8, 2),
    "v6e": ("tpu-v6e-slice", 4, 8, 2),
}


@dataclass(frozen=True)
class TpuSlice:
    accelerator_label: str   # cloud.google.com/gke-tpu-accelerator
    topology: str            # cloud.google.com/gke-tpu-topology
    chips: int
    hosts: int

    @property
    def chips_per_host(self) -> int:
        return self.chips // self.hosts


def _topology(chips: int, rank: int) -> str:
    """The usual topology of a slice: dimensions as equal as powers of two allow,
    smallest first, a trailing 1 last (``2x4``, ``2x2x1``, ``2x2x4``)."""
    dims = [1] * rank
    left, i = chips, 0
    while left > 1:
        dims[i % rank] *= 2
        left //= 2
        i += 1
    ordered = sorted(d for d in dims if d > 1) + [d for d in dims if d == 1]
    return "x".join(str(d) for d in ordered)


def tpu_slice(model: str) -> TpuSlice:
    """The GKE shape of a catalog slice name, or UnsupportedFeature."""
    parts = model.lower().split("-")
    chips = L.slice_chips(model)
    gen = _TPU.get(parts[1]) if len(parts) == 3 else None
    if gen is None or not chips or chips & (chips - 1):
        raise UnsupportedFeature(
            f"accelerators: {model} is not a TPU slice GKE offers "
            f"(generations: {', '.join(f'tpu-{g}' for g in _TPU)})")
    label, per_host, single_host_max, rank = gen
    hosts = 1 if chips <= single_host_max else chips // per_host
    return TpuSlice(label, _topology(chips, rank), chips, hosts)


def device_resource(model: str) -> str:
    """The extended resource that counts this accelerator."""
    if model.lower().startswith("tpu-"):
        return TPU
    if L.gpu_model(model) in _amd_models() or model.upper().startswith("MI"):
        return AMD
    return NVIDIA


def _amd_models() -> set[str]:
    return {m for v in KNOWN_VALUES[L.AMD_PRODUCT] if (m := L.gpu_model(v))}


def label_values(model: str, key: str) -> list[str]:
    """The known values of label ``key`` that mean ``model``."""
    return sorted(v for v in KNOWN_VALUES.get(key, ()) if L.gpu_model(v) == model)


def _term(expressions: list[dict[str, Any]]) -> dict[str, Any]:
    return {"matchExpressions": expressions}


def _expr(key: str, values: list[str]) -> dict[str, Any]:
    return {"key": key, "operator": "In", "values": values}


def _with_spot(scheme: str, base: dict[str, Any], spot: bool) -> list[dict[str, Any]]:
    if not spot:
        return [_term([base])]
    pairs = _PLATFORM_SPOT.get(scheme, SPOT_LABELS)
    return [_term([base, _expr(k, [v])]) for k, v in pairs]


def gpu_affinity(model: str, *, spot: bool, custom_label: str | None) -> dict[str, Any]:
    """A required node affinity selecting nodes of ``model`` (and spot capacity)."""
    terms: list[dict[str, Any]] = []
    if custom_label:
        values = sorted({model, *(v for k in KNOWN_VALUES for v in label_values(model, k))})
        terms += _with_spot(custom_label, _expr(custom_label, values), spot)
    for key in (L.GPU_PRODUCT, L.GKE_ACCELERATOR, L.KARPENTER_GPU, L.AMD_PRODUCT):
        values = label_values(model, key)
        if values:
            terms += _with_spot(key, _expr(key, values), spot)
    sized = re.fullmatch(r"(.+)-(\d+)GB", model)
    base = label_values(sized.group(1), L.KARPENTER_GPU) if sized else []
    if sized and base and not label_values(model, L.KARPENTER_GPU):
        # Karpenter names the model alone (a100) and the memory in MiB (81920).
        memory = _expr(L.KARPENTER_GPU_MEMORY, [str(int(sized.group(2)) * 1024)])
        terms += [_term([*t["matchExpressions"], memory]) for t in
                  _with_spot(L.KARPENTER_GPU, _expr(L.KARPENTER_GPU, base), spot)]
    if not terms:
        raise UnsupportedFeature(
            f"accelerators: no known node label names {model}",
            hint="name the label your nodes carry in kubernetes.accelerator_label")
    return {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}


def spot_affinity() -> dict[str, Any]:
    """A required node affinity selecting spot capacity (CPU-only pods)."""
    terms = [_term([_expr(k, [v])]) for k, v in SPOT_LABELS]
    return {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}


def tolerations(resource: str | None, *, spot: bool) -> list[dict[str, Any]]:
    """Tolerations for the taints GPU/TPU pools (and spot pools) usually carry."""
    keys = [resource] if resource else []
    if spot:
        keys += list(SPOT_TAINTS)
    return [{"effect": "NoSchedule", "key": k, "operator": "Exists"} for k in keys]
