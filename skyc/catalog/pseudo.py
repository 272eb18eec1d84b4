"""Offers for machines that are not bought by the hour: this machine and SSH pools.

Both are priced at 0. ``local`` is this machine (vCPUs from ``os.cpu_count``,
memory from ``/proc/meminfo``, NVIDIA GPUs from ``nvidia-smi`` when it exists);
an SSH pool offers one node shape per pool (region = pool name), with the
accelerators, cpus and memory its config declares, and at most as many nodes as
it has hosts.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from skyc.catalog.offer import Offer
from skyc.errors import ConfigError
from skyc.settings.config import SshPool


def _meminfo_gib(path: Path = Path("/proc/meminfo")) -> float | None:
    try:
        text = path.read_text()
    except OSError:
        return None
    m = re.search(r"^MemTotal:\s+(\d+)\s+kB", text, re.MULTILINE)
    return round(int(m.group(1)) / 1024 / 1024, 1) if m else None


def _local_gpus() -> tuple[str, int, float | None] | None:
    """(name, count, memory GiB) of this machine's NVIDIA GPUs, or None."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        out = subprocess.run(
            [exe, "--query-gpu=name,memory.total", "--format=csv,noheader,nounits"],
            capture_output=True, text=True, timeout=10, check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    rows = [line.split(",") for line in out.strip().splitlines() if line.strip()]
    if not rows:
        return None
    name = _gpu_model(rows[0][0])
    try:
        mem: float | None = round(float(rows[0][1]) / 1024, 1)
    except (IndexError, ValueError):
        mem = None
    return name, len(rows), mem


def _gpu_model(full: str) -> str:
    """``NVIDIA H100 80GB HBM3`` -> ``H100``; ``NVIDIA A100-SXM4-80GB`` -> ``A100-80GB``."""
    text = full.replace("NVIDIA", "").replace("Tesla", "").strip()
    m = re.match(r"([A-Z]+\d+[A-Z]?)", text)
    model = m.group(1) if m else text.split()[0] if text else "GPU"
    if model == "A100" and "80GB" in text:
        return "A100-80GB"
    return model


def local_offers() -> list[Offer]:
    gpus = _local_gpus()
    return [Offer(
        cloud="local", region="local", zone=None, instance_type=None,
        accelerator=gpus[0] if gpus else None,
        accelerator_count=gpus[1] if gpus else 0,
        accelerator_memory_gib=gpus[2] if gpus else None,
        vcpus=float(os.cpu_count() or 1), memory_gib=_meminfo_gib(),
        price=0.0, spot_price=None, arch=os.uname().machine, elastic=False,
    )]


def parse_pool_accelerators(pool_name: str, value: str | dict[str, int] | None
                            ) -> tuple[str, float] | None:
    if value is None:
        return None
    if isinstance(value, dict):
        if len(value) != 1:
            raise ConfigError(f"ssh_pools.{pool_name}.accelerators: give one accelerator type")
        key, num = next(iter(value.items()))
        return key, float(num)
    name, _, count = value.partition(":")
    try:
        return name.strip(), float(count) if count else 1.0
    except ValueError:
        raise ConfigError(
            f"ssh_pools.{pool_name}.accelerators: '{value}' is not NAME or NAME:COUNT"
        ) from None


def ssh_offers(pools: dict[str, SshPool]) -> list[Offer]:
    offers = []
    for name in sorted(pools):
        pool = pools[name]
        acc = parse_pool_accelerators(name, pool.accelerators)
        offers.append(Offer(
            cloud="ssh", region=name, zone=None, instance_type=None,
            accelerator=acc[0] if acc else None, accelerator_count=acc[1] if acc else 0,
            accelerator_memory_gib=None, vcpus=pool.cpus, memory_gib=pool.memory,
            price=0.0, spot_price=None, elastic=False, max_nodes=len(pool.hosts),
        ))
    return offers
