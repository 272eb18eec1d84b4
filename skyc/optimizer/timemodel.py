"""The time model behind ``--optimize time``.

A task's duration is taken as inversely proportional to the throughput of its
nodes: ``hours = 1 / (throughput(accelerator) x count x num_nodes)``, in units
where one H100 runs the reference job in one hour. ``RELATIVE_THROUGHPUT`` is
dense BF16/FP16 tensor throughput relative to an H100 SXM (vendors' published
figures, rounded). TPU slices count chips (v5e/v6e names give chips; v2-v5p
names give TensorCores, two per chip). CPU-only nodes all count as 0.01 H100
each: the model does not rank CPU shapes, so among them the cheapest wins.
Unknown accelerators count as 0.1. Data moved between tasks adds
``GB x 8 / 10 Gbit/s`` (see ``skyc.catalog.egress``).
"""

from __future__ import annotations

import re

from skyc.catalog.offer import Offer

RELATIVE_THROUGHPUT: dict[str, float] = {
    "B300": 2.5, "B200": 2.25, "H200": 1.1, "H100": 1.0, "H100-MEGA": 1.0,
    "MI300X": 1.3, "A100-80GB": 0.32, "A100": 0.31, "L40S": 0.37, "Gaudi HL-205": 0.3,
    "Trainium2": 0.67, "Trainium": 0.19, "Inferentia2": 0.19, "Inferentia": 0.06,
    "L4": 0.12, "A10": 0.13, "A10G": 0.07, "V100": 0.13, "V100-32GB": 0.13,
    "T4": 0.066, "T4g": 0.066, "Radeon Pro V520": 0.03, "MI25": 0.025,
    "P100": 0.02, "P4": 0.02, "K80": 0.01, "M60": 0.01,
}
# Per TPU chip.
TPU_CHIP_THROUGHPUT: dict[str, float] = {
    "v2": 0.046, "v3": 0.12, "v4": 0.28, "v5litepod": 0.2, "v5p": 0.46, "v6e": 0.93,
}
_CORES_NAMED = ("v2", "v3", "v4", "v5p")
_TPU = re.compile(r"^tpu-(v\d+[a-z]*)-(\d+)$")
CPU_NODE_THROUGHPUT = 0.01
UNKNOWN_THROUGHPUT = 0.1


def accelerator_throughput(name: str, count: float) -> float:
    m = _TPU.match(name.lower())
    if m:
        gen, n = m.group(1), int(m.group(2))
        chips = n / 2 if gen in _CORES_NAMED else n
        return TPU_CHIP_THROUGHPUT.get(gen, UNKNOWN_THROUGHPUT) * max(chips, 1) * count
    return RELATIVE_THROUGHPUT.get(name, UNKNOWN_THROUGHPUT) * count


def estimated_hours(offer: Offer, num_nodes: int) -> float:
    if offer.accelerator and offer.accelerator_count > 0:
        per_node = accelerator_throughput(offer.accelerator, offer.accelerator_count)
    else:
        per_node = CPU_NODE_THROUGHPUT
    return 1.0 / (per_node * max(num_nodes, 1))
