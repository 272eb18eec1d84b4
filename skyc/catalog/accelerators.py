"""Accelerator names: canonical spelling, aliases and per-accelerator memory.

Names are matched case-insensitively; spaces and underscores count as dashes.
Canonical names are SkyPilot's (``A100-80GB``, ``H100``, ``L40S``, ``tpu-v5litepod-8``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# Memory per accelerator (GiB) for catalogs whose GpuInfo does not carry it
# (Azure, GCP TPUs). Figures are the vendors' published HBM/GDDR sizes.
KNOWN_MEMORY_GIB: dict[str, float] = {
    "A10": 24, "A10G": 24, "A100": 40, "A100-80GB": 80, "B200": 180, "B300": 270,
    "H100": 80, "H100-MEGA": 80, "H200": 141, "K80": 12, "L4": 24, "L40S": 48,
    "M60": 8, "MI25": 16, "MI300X": 192, "P100": 16, "P4": 8, "T4": 16, "T4g": 16,
    "V100": 16, "V100-32GB": 32, "Radeon Pro V520": 8,
}

# What ``skyc show-gpus`` lists without a name (``--all`` lists every accelerator).
COMMON_ACCELERATORS: tuple[str, ...] = (
    "B200", "H200", "H100", "A100-80GB", "A100", "L40S", "L4", "A10G", "A10", "T4", "V100",
    "MI300X", "tpu-v5litepod-8", "tpu-v6e-8",
)

# Equal prices in one place: the instance family SkyPilot maps an accelerator to
# first wins (``a3-highgpu-8g`` for H100 on GCP, not ``a3-edgegpu-8g``), then the
# type's name. Families not listed come after the listed ones.
PREFERRED_FAMILIES: tuple[str, ...] = (
    "a3-highgpu-", "a3-megagpu-", "a3-ultragpu-", "a4-highgpu-", "a2-highgpu-",
    "a2-ultragpu-", "g2-standard-", "n1-",
    "p5.", "p5e.", "p5en.", "p4d.", "p4de.", "p3.", "g6e.", "g6.", "g5.", "g4dn.",
    "Standard_ND", "Standard_NC", "Standard_NV",
)


def family_rank(instance_type: str) -> int:
    """Where ``instance_type``'s family comes in :data:`PREFERRED_FAMILIES`."""
    for i, prefix in enumerate(PREFERRED_FAMILIES):
        if instance_type.startswith(prefix):
            return i
    return len(PREFERRED_FAMILIES)


# Aliases (normalized key -> canonical name). TPU v5e is catalogued as v5litepod.
_ALIASES: dict[str, str] = {
    "a100-40gb": "A100", "a100-40g": "A100", "a100-80g": "A100-80GB",
    "h100-80gb": "H100", "h100-sxm": "H100", "h200-141gb": "H200",
    "v100-16gb": "V100", "v100-32g": "V100-32GB", "mi300": "MI300X",
    "radeon-mi25": "MI25", "gaudi": "Gaudi HL-205", "gaudi-hl205": "Gaudi HL-205",
    "trainium1": "Trainium", "inferentia1": "Inferentia", "l40-s": "L40S",
}
_TPU_V5E = re.compile(r"^tpu-v5e(-\d+)?$")


def normalize_key(name: str) -> str:
    return re.sub(r"[\s_]+", "-", name.strip()).lower()


def canonical_name(name: str, known: dict[str, str]) -> str | None:
    """The canonical spelling of ``name`` among ``known`` (normalized -> canonical).

    Returns None when no accelerator of that name exists in the catalog.
    """
    key = normalize_key(name)
    m = _TPU_V5E.match(key)
    if m:
        key = "tpu-v5litepod" + (m.group(1) or "")
    key = normalize_key(_ALIASES.get(key, key))
    return known.get(key)


def memory_of(name: str) -> float | None:
    return KNOWN_MEMORY_GIB.get(name)


def gpu_info_memory_gib(gpu_info: str) -> float | None:
    """Per-accelerator memory from a GpuInfo blob (``MemoryInfo.SizeInMiB``)."""
    m = re.search(r"'MemoryInfo':\s*\{'SizeInMiB':\s*(\d+)", gpu_info)
    if m is None:
        return None
    return round(int(m.group(1)) / 1024, 3)


def nearest_names(name: str, known: Iterable[str], n: int = 3) -> list[str]:
    """The known names closest to ``name`` (a did-you-mean), case aside."""
    import difflib

    lowered = {k.lower(): k for k in sorted(known)}
    return [lowered[m] for m in difflib.get_close_matches(name.lower(), list(lowered), n=n,
                                                          cutoff=0.3)]
