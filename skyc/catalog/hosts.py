"""Which host VM can carry an accelerator that is priced on its own (GCP's layout).

In GCP's catalog an accelerator row (empty InstanceType) is priced for N
accelerators together, and the VM that carries them is a separate row priced
alone. A placement pairs the two; its price is the sum. The pairing rules:

- T4, V100, P100, P4 attach to N1 machine types (n1-standard/highmem/highcpu),
  within GCP's published vCPU and memory limits per accelerator count; when the
  task sizes the host itself (cpus, memory or an instance type) any N1 type
  within those limits will do, otherwise the host is at least SkyPilot's default
  for that accelerator and count (``default_host``): so 8x V100 never lands on
  an n1-standard-1;
- L4 come built into G2 (g2-standard-4..32 carry 1, -24 carries 2, -48 carries 4,
  -96 carries 8);
- A100 in a2-highgpu-<N>g (and a2-megagpu-16g for 16), A100-80GB in
  a2-ultragpu-<N>g, H100 in a3-highgpu-<N>g and a3-edgegpu-8g, H100-MEGA in
  a3-megagpu-8g, H200 in a3-ultragpu-8g, B200 in a4-highgpu-8g;
- TPU slices (``tpu-*``) are TPU VMs: no host row.
"""

from __future__ import annotations

import re

# (accelerator, count) -> (max vCPUs, max memory GiB) on N1 hosts.
_N1_LIMITS: dict[str, dict[int, tuple[float, float]]] = {
    "T4": {1: (48, 312), 2: (48, 312), 4: (96, 624)},
    "V100": {1: (12, 78), 2: (24, 156), 4: (48, 312), 8: (96, 624)},
    "P100": {1: (16, 104), 2: (32, 208), 4: (96, 624)},
    "P4": {1: (24, 156), 2: (48, 312), 4: (96, 624)},
}
# (accelerator, count) -> the fewest vCPUs of a host the task did not size; its
# memory is at least 4 GiB per vCPU. These are SkyPilot's GCP defaults (P4 has
# no entry of its own there and takes the default row: 8 vCPUs per GPU).
_N1_DEFAULT_VCPUS: dict[str, dict[int, int]] = {
    "T4": {1: 4, 2: 8, 4: 48},
    "V100": {1: 8, 2: 16, 4: 32, 8: 64},
    "P100": {1: 8, 2: 16, 4: 32},
    "P4": {1: 8, 2: 16, 4: 32},
}
_MEMORY_PER_VCPU = 4.0
_N1 = re.compile(r"^n1-(standard|highmem|highcpu)-\d+$")
_G2_COUNT = {"g2-standard-24": 2, "g2-standard-48": 4, "g2-standard-96": 8}
_BUILT_IN = re.compile(r"^(a2|a3|a4|g2)-")
_FIXED: dict[str, tuple[str, ...]] = {
    "H100-MEGA": ("a3-megagpu-8g",),
    "H200": ("a3-ultragpu-8g", "a3-ultragpu-8g-nolssd"),
    "B200": ("a4-highgpu-8g",),
}

TPU_VM = "TPU-VM"


def is_tpu(accelerator: str) -> bool:
    return accelerator.lower().startswith("tpu-")


def host_only(instance_type: str) -> bool:
    """Types whose accelerators are priced elsewhere: never offered without them."""
    return bool(_BUILT_IN.match(instance_type)) or instance_type.endswith("-tpu")


def default_host(acc: str, count: float) -> tuple[float, float] | None:
    """The smallest (vCPUs, memory GiB) of a host the task did not size, if any."""
    n = int(count)
    vcpus = _N1_DEFAULT_VCPUS.get(acc, {}).get(n) if n == count else None
    if vcpus is None:
        return None
    return float(vcpus), vcpus * _MEMORY_PER_VCPU


def carries(host: str, vcpus: float | None, memory: float | None, acc: str, count: float,
            *, sized: bool = False) -> bool:
    """Whether ``host`` can carry ``count`` x ``acc``.

    ``sized``: the task gave cpus, memory or the instance type, so the default
    host size does not apply.
    """
    n = int(count)
    if n != count:
        return False
    if acc in _N1_LIMITS:
        limits = _N1_LIMITS[acc].get(n)
        if limits is None or not _N1.match(host):
            return False
        if (vcpus or 0) > limits[0] or (memory or 0) > limits[1]:
            return False
        least = None if sized else default_host(acc, n)
        return least is None or ((vcpus or 0) >= least[0] and (memory or 0) >= least[1])
    if acc == "L4":
        if not host.startswith("g2-standard-"):
            return False
        return _G2_COUNT.get(host, 1) == n
    if acc == "A100":
        return host == f"a2-highgpu-{n}g" or (n == 16 and host == "a2-megagpu-16g")
    if acc == "A100-80GB":
        return host == f"a2-ultragpu-{n}g"
    if acc == "H100":
        return host == f"a3-highgpu-{n}g" or (
            n == 8 and host in ("a3-edgegpu-8g", "a3-edgegpu-8g-nolssd")
        )
    return host in _FIXED.get(acc, ())
