"""What GCP machine families and TPU slices allow, as data (``data/gcp_machine_families.csv``,
``data/gcp_tpu_hosts.csv``):

- the boot disk types a family takes (N4, C4, C4D, A4 and the H200 A3 Ultra take
  Hyperdisk only; C3, G2 and A3 take no ``pd-standard``), whether it supports a
  compact placement policy (and for how many VMs) and live migration;
- the GPUs attached to N1 hosts (``guest_accelerators``); A2/A3/A4/G2 machine
  types carry theirs built in;
- how many hosts (workers) a TPU slice has: v2/v3/v4/v5p count TensorCores, 8
  per host; v5e (``v5litepod``) and v6e count chips, up to 8 on one host and 4
  per host in a multi-host slice.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from skyc.compiler.gcp.images import tpu_generation
from skyc.errors import ConfigError, UnsupportedFeature

# N1 hosts carry these GPUs as guest accelerators (the names GCP's API uses).
ATTACHED_GPUS = {
    "T4": "nvidia-tesla-t4",
    "V100": "nvidia-tesla-v100",
    "P100": "nvidia-tesla-p100",
    "P4": "nvidia-tesla-p4",
}

# Disk tiers -> the persistent disk type asked for, and Hyperdisk Balanced's
# provisioned (IOPS, throughput MiB/s) where a family takes Hyperdisk only
# (None: Hyperdisk's own baseline).
DISK_TIERS: dict[str, tuple[str, tuple[int, int] | None]] = {
    "low": ("pd-standard", None),
    "medium": ("pd-balanced", None),
    "high": ("pd-ssd", (12000, 500)),
    "ultra": ("pd-ssd", (16000, 1000)),
    "best": ("pd-ssd", (16000, 1000)),
}
DEFAULT_DISK_TIER = "medium"
HYPERDISK = "hyperdisk-balanced"
MIN_DISK_GIB = 10

_TPU = re.compile(r"^tpu-(?P<type>v\d+(?:litepod|p|e)?-(?P<units>\d+))$")


@dataclass(frozen=True)
class Family:
    name: str
    boot_disks: tuple[str, ...]
    compact_max_vms: int
    live_migration: bool


def _rows(name: str) -> list[dict[str, str]]:
    text = resources.files("skyc.compiler").joinpath(f"data/{name}").read_text()
    return list(csv.DictReader(text.splitlines()))


@lru_cache(maxsize=1)
def _families() -> dict[str, Family]:
    return {
        row["Family"]: Family(row["Family"], tuple(row["BootDisks"].split()),
                              int(row["CompactMaxVms"]), row["LiveMigration"] == "yes")
        for row in _rows("gcp_machine_families.csv")
    }


@lru_cache(maxsize=1)
def _tpu_hosts() -> dict[str, tuple[int, int]]:
    return {row["Generation"]: (int(row["SingleHostMax"]), int(row["PerHost"]))
            for row in _rows("gcp_tpu_hosts.csv")}


def family(machine_type: str) -> Family:
    """The family of a machine type (``a3-ultragpu-8g`` -> ``a3-ultragpu``, ``n2-standard-8``
    -> ``n2``); UnsupportedFeature for one skyc has no facts about."""
    parts = machine_type.split("-")
    for name in ("-".join(parts[:2]), parts[0]):
        found = _families().get(name)
        if found is not None:
            return found
    raise UnsupportedFeature(
        f"gcp machine type {machine_type!r}: skyc knows no disk and placement facts of its "
        "family", hint="pick another instance_type, or add the family to "
        "skyc/compiler/data/gcp_machine_families.csv")


def boot_disk(machine_type: str, tier: str | None, size_gib: int
              ) -> tuple[str, tuple[int, int] | None]:
    """(disk type, provisioned IOPS and throughput or None) of a boot disk."""
    tier = tier or DEFAULT_DISK_TIER
    if tier not in DISK_TIERS:
        raise ConfigError(f"disk_tier: {tier!r} is not one of {', '.join(DISK_TIERS)}")
    if size_gib < MIN_DISK_GIB:
        raise ConfigError(f"disk_size: {size_gib} GiB is below GCP's {MIN_DISK_GIB} GiB minimum")
    wanted, performance = DISK_TIERS[tier]
    allowed = family(machine_type).boot_disks
    if wanted in allowed:
        return wanted, None
    if HYPERDISK in allowed and (performance is not None or allowed == (HYPERDISK,)):
        if performance is None:
            return HYPERDISK, None
        iops = max(3000, min(performance[0], 500 * size_gib))   # at most 500 IOPS per GiB
        throughput = max(140, min(performance[1], iops // 4))   # 140 MiB/s is the floor
        return HYPERDISK, (iops, throughput)
    return allowed[0], None


def compact_placement(machine_type: str, num_nodes: int) -> bool:
    """Whether the nodes get a compact placement policy: multi-node, and the family
    takes one of that many VMs."""
    return 1 < num_nodes <= family(machine_type).compact_max_vms


@lru_cache(maxsize=1)
def _local_ssd_prefixes() -> tuple[str, ...]:
    return tuple(row["prefix"] for row in _rows("gcp_local_ssd.csv"))


def bundles_local_ssd(machine_type: str) -> bool:
    """Whether the machine type comes with local SSD. Such a VM cannot be stopped
    through the provider: GCP wants ``discard-local-ssd`` on stop, which neither
    Terraform's nor Pulumi's google provider passes (terraform-provider-google#26173)."""
    return (machine_type.startswith(_local_ssd_prefixes())
            and not machine_type.endswith("-nolssd"))


def live_migration(machine_type: str) -> bool:
    return family(machine_type).live_migration


@dataclass(frozen=True)
class TpuSlice:
    accelerator: str          # tpu-v4-32, as the catalog names it
    accelerator_type: str     # v4-32, as the TPU API names it
    generation: str           # v4
    hosts: int                # workers: one node of the cluster each


def tpu_slice(accelerator: str) -> TpuSlice:
    name = accelerator.lower()
    match = _TPU.match(name)
    generation = tpu_generation(name)  # UnsupportedFeature for an unknown shape
    shape = _tpu_hosts().get(generation)
    if match is None or shape is None:
        raise UnsupportedFeature(f"accelerators: skyc does not know how many hosts a "
                                 f"{accelerator} slice has")
    units = int(match.group("units"))
    single_max, per_host = shape
    hosts = 1 if units <= single_max else units // per_host
    return TpuSlice(accelerator=name, accelerator_type=match.group("type"),
                    generation=generation, hosts=hosts)
