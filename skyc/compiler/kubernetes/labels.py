"""Accelerator models from node labels, in skyc's (SkyPilot's) accelerator names.

The labels the common setups write:

- ``nvidia.com/gpu.product`` (NVIDIA GPU feature discovery, the GPU operator):
  ``NVIDIA-H100-80GB-HBM3`` -> ``H100``, ``NVIDIA-A100-SXM4-80GB`` -> ``A100-80GB``,
  ``Tesla-T4`` -> ``T4``; MIG slices (``...-MIG-1g.10gb``) are not whole GPUs.
- ``cloud.google.com/gke-accelerator`` (GKE): ``nvidia-l4`` -> ``L4``,
  ``nvidia-tesla-a100`` -> ``A100``, ``nvidia-h100-mega-80gb`` -> ``H100-MEGA``.
- ``cloud.google.com/gke-tpu-accelerator`` + ``cloud.google.com/gke-tpu-topology``
  (GKE TPU slices): ``tpu-v5-lite-podslice`` + ``2x4`` -> ``tpu-v5litepod-8``
  (what ``tpu-v5e-8`` means in the catalog); v4 and v5p slices are named by
  TensorCores (two per chip), as Cloud TPU names them: ``tpu-v5p-slice`` + ``2x2x1``
  -> ``tpu-v5p-8``.
- ``karpenter.k8s.aws/instance-gpu-name`` (EKS with Karpenter): ``h100`` -> ``H100``,
  with ``karpenter.k8s.aws/instance-gpu-memory`` (MiB) telling A100 from A100-80GB.
- ``amd.com/gpu.product-name`` (AMD's node labeller): ``AMD_Instinct_MI300X_OAM`` -> ``MI300X``.
- a label named by ``kubernetes.accelerator_label`` in the config, read the same way.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from skyc.catalog.accelerators import KNOWN_MEMORY_GIB, canonical_name, normalize_key

GPU_PRODUCT = "nvidia.com/gpu.product"
GPU_MEMORY = "nvidia.com/gpu.memory"
GKE_ACCELERATOR = "cloud.google.com/gke-accelerator"
GKE_TPU = "cloud.google.com/gke-tpu-accelerator"
GKE_TPU_TOPOLOGY = "cloud.google.com/gke-tpu-topology"
KARPENTER_GPU = "karpenter.k8s.aws/instance-gpu-name"
KARPENTER_GPU_MEMORY = "karpenter.k8s.aws/instance-gpu-memory"
AMD_PRODUCT = "amd.com/gpu.product-name"

# GKE's TPU accelerator label -> (catalog generation, TensorCores per chip).
_TPU_GENERATIONS: dict[str, tuple[str, int]] = {
    "tpu-v4-podslice": ("v4", 2),
    "tpu-v5-lite-podslice": ("v5litepod", 1),
    "tpu-v5-lite-device": ("v5litepod", 1),
    "tpu-v5p-slice": ("v5p", 2),
    "tpu-v6e-slice": ("v6e", 1),
}

_KNOWN = {normalize_key(n): n for n in KNOWN_MEMORY_GIB}
_MODEL = re.compile(r"^(?:[A-Z]{1,3}\d{1,4}[A-Z]?|[A-Z]{2,}\d{2,}[A-Z]*)$")
_NOISE = {"NVIDIA", "TESLA", "GEFORCE", "AMD", "INSTINCT", "RADEON"}


def gpu_model(raw: str, memory_mib: float | None = None) -> str | None:
    """A GPU model label's value as a skyc accelerator name, or None for MIG slices.

    ``memory_mib`` (per GPU, from a memory label) tells apart models sold in two
    memory sizes (A100 40/80 GB, V100 16/32 GB).
    """
    tokens = [t for t in re.split(r"[-_\s]+", raw.strip().upper()) if t]
    if "MIG" in tokens or any(t.startswith("MIG") for t in tokens):
        return None
    tokens = [t for t in tokens if t not in _NOISE and t != "SHARED"]
    if not tokens:
        return None
    base_at = next((i for i, t in enumerate(tokens) if _MODEL.match(t)), 0)
    base = tokens[base_at]
    rest = tokens[base_at + 1:]
    if base == "RTX" and rest:
        base, rest = "RTX" + rest[0], rest[1:]
    if "MEGA" in rest:
        base = f"{base}-MEGA"
    gbs = [int(m.group(1)) for t in rest if (m := re.fullmatch(r"(\d+)GB?", t))]
    if not gbs and memory_mib:
        gbs = [round(memory_mib / 1024)]
    for gb in gbs:
        sized = canonical_name(f"{base}-{gb}GB", _KNOWN)
        if sized is not None and sized != canonical_name(base, _KNOWN):
            return sized
    return canonical_name(base, _KNOWN) or base


def tpu_chips(topology: str | None) -> int | None:
    """Chips in a TPU slice of this topology (``2x4`` -> 8), or None."""
    try:
        return math.prod(int(d) for d in (topology or "").lower().split("x"))
    except ValueError:
        return None


def tpu_slice(accelerator: str, topology: str | None) -> str | None:
    """GKE's TPU labels as a catalog slice name (``tpu-v5litepod-8``), or None."""
    gen = _TPU_GENERATIONS.get(accelerator.strip().lower())
    chips = tpu_chips(topology)
    if gen is None or not chips:
        return None
    name, cores = gen
    return f"tpu-{name}-{chips * cores}"


def slice_chips(name: str) -> int | None:
    """Chips in a catalog TPU slice (``tpu-v5p-8`` -> 4, ``tpu-v5litepod-8`` -> 8)."""
    m = re.fullmatch(r"tpu-(v\d+[a-z]*)-(\d+)", name.lower())
    if m is None:
        return None
    cores = {gen: per for gen, per in _TPU_GENERATIONS.values()}.get(m.group(1), 1)
    return int(m.group(2)) // cores


def canonical_accelerator(name: str) -> str:
    """A configured accelerator name in skyc's spelling (``tpu-v5e-8`` -> ``tpu-v5litepod-8``)."""
    key = normalize_key(name)
    m = re.fullmatch(r"tpu-v5e-(\d+)", key)
    if m:
        return f"tpu-v5litepod-{m.group(1)}"
    if key.startswith("tpu-"):
        return key
    return gpu_model(name) or name


def _mib(value: str | None) -> float | None:
    try:
        return float(value) if value else None
    except ValueError:
        return None


def accelerator_from_labels(labels: Mapping[str, str], custom: str | None = None
                            ) -> str | None:
    """The node's accelerator model from its labels (``custom`` first), or None."""
    if custom and labels.get(custom):
        return gpu_model(labels[custom])
    if labels.get(GKE_TPU):
        return tpu_slice(labels[GKE_TPU], labels.get(GKE_TPU_TOPOLOGY))
    if labels.get(GPU_PRODUCT):
        return gpu_model(labels[GPU_PRODUCT], _mib(labels.get(GPU_MEMORY)))
    if labels.get(GKE_ACCELERATOR):
        return gpu_model(labels[GKE_ACCELERATOR])
    if labels.get(KARPENTER_GPU):
        return gpu_model(labels[KARPENTER_GPU], _mib(labels.get(KARPENTER_GPU_MEMORY)))
    if labels.get(AMD_PRODUCT):
        return gpu_model(labels[AMD_PRODUCT])
    return None


def accelerator_memory_gib(model: str, labels: Mapping[str, str]) -> float | None:
    """Memory per accelerator: from a memory label when there is one, else the model's."""
    for key in (GPU_MEMORY, KARPENTER_GPU_MEMORY):
        mib = _mib(labels.get(key))
        if mib:
            return round(mib / 1024, 1)
    return KNOWN_MEMORY_GIB.get(model)
