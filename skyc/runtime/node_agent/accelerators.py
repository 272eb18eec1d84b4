"""The node's accelerators (NVIDIA, AMD, TPU) for ``facts``, and the ROCm variables
that give a job its AMD GPUs."""

from __future__ import annotations

import os
import sys

from skyc.runtime.node_agent.base import VERSION, Args, find_program

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


# ---------------------------------------------------------------- accelerators


def _tool(argv: list[str]) -> str | None:
    """A tool's output; None when it is not installed or fails. Each phase's start asks
    for amd-smi and most nodes have none: PATH is looked through first, so that they do
    not import subprocess or fork for it."""
    if find_program(argv[0], os.environ) is None:
        return None
    import subprocess

    try:
        out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.decode("utf-8", "replace")


def canonical_gpu_name(raw: str, memory_mib: int | None) -> str:
    import re

    name = raw.strip()
    for prefix in ("NVIDIA ", "Tesla ", "AMD Instinct ", "AMD "):
        if name.startswith(prefix):
            name = name[len(prefix):]
    base = re.split(r"[\s\-]", name, maxsplit=1)[0]
    if base == "A100" and memory_mib is not None and memory_mib > 50000:
        return "A100-80GB"
    return base


def detect_nvidia() -> dict[str, Any] | None:
    import re

    out = _tool(["nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader"])
    if not out:
        return None
    gpus: list[dict[str, Any]] = []
    for line in out.splitlines():
        if not line.strip():
            continue
        name, _, mem = line.rpartition(",")
        m = re.search(r"(\d+)", mem)
        mib = int(m.group(1)) if m else None
        gpus.append({"name": name.strip(), "memory_mib": mib})
    if not gpus:
        return None
    return {"vendor": "nvidia", "count": len(gpus), "gpus": gpus,
            "name": canonical_gpu_name(gpus[0]["name"], gpus[0]["memory_mib"])}


def parse_amd_smi(out: str) -> list[dict[str, Any]]:
    """GPUs from ``amd-smi static --asic --vram``: one ``GPU: <n>`` block each, with
    ``MARKET_NAME`` (``Market Name`` in older releases) and the VRAM ``SIZE`` in MB."""
    import re

    gpus: list[dict[str, Any]] = []
    for block in re.split(r"^GPU:\s*\d+\s*$", out, flags=re.M)[1:]:
        name = re.search(r"^\s*(?:MARKET_NAME|Market Name):\s*(.+?)\s*$", block, re.M)
        vram = block.partition("VRAM:")[2]
        size = re.search(r"^\s*SIZE:\s*(\d+)\s*MB", vram, re.M)
        if name:
            gpus.append({"name": name.group(1),
                         "memory_mib": int(size.group(1)) if size else None})
    return gpus


def parse_rocm_smi(out: str, meminfo: str | None) -> list[dict[str, Any]]:
    """GPUs from ``rocm-smi`` (the concise table: the name is on the line under each
    device's row) and ``rocm-smi --showmeminfo vram`` (bytes per device)."""
    import re

    names: list[str] = []
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if re.match(r"^\d+\s+\[0x", line) and i + 1 < len(lines):
            names.append(lines[i + 1].strip())
    total: dict[int, int] = {}
    for m in re.finditer(r"^GPU\[(\d+)\]\s*:\s*VRAM Total Memory \(B\):\s*(\d+)", meminfo or "",
                         re.M):
        total[int(m.group(1))] = int(m.group(2)) // (1024 * 1024)
    return [{"name": n, "memory_mib": total.get(i)} for i, n in enumerate(names)]


def detect_amd() -> dict[str, Any] | None:
    gpus: list[dict[str, Any]] = []
    out = _tool(["amd-smi", "static", "--asic", "--vram"])
    if out:
        gpus = parse_amd_smi(out)
    if not gpus:
        out = _tool(["rocm-smi"])
        if out:
            gpus = parse_rocm_smi(out, _tool(["rocm-smi", "--showmeminfo", "vram"]))
    if gpus:
        return {"vendor": "amd", "count": len(gpus), "gpus": gpus,
                "name": canonical_gpu_name(gpus[0]["name"], gpus[0]["memory_mib"])}
    if os.path.exists("/dev/kfd"):
        return {"vendor": "amd", "count": None, "gpus": [], "name": None}
    return None


ROCM_VISIBILITY = ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")


def rocm_env(env: dict[str, str]) -> dict[str, str]:
    """On an AMD node, the ROCm variables that choose a job's GPUs (what
    ``CUDA_VISIBLE_DEVICES`` does for NVIDIA): the first SKYPILOT_NUM_GPUS_PER_NODE
    devices (rounded up), or all of them when the task asks for none. A variable the
    job or the node already sets is kept, and then none is added."""
    if any(v in env for v in (*ROCM_VISIBILITY, "CUDA_VISIBLE_DEVICES")):
        return {}
    found = detect_amd()
    if not found or not found["count"]:
        return {}
    count = int(found["count"])
    try:
        wanted = float(env.get("SKYPILOT_NUM_GPUS_PER_NODE") or 0)
    except ValueError:
        wanted = 0
    if wanted > 0:
        count = min(count, int(wanted) + (wanted % 1 > 0))
    devices = ",".join(str(i) for i in range(count))
    return {name: devices for name in ROCM_VISIBILITY}


def detect_tpu() -> dict[str, Any] | None:
    import re

    acc = os.environ.get("TPU_ACCELERATOR_TYPE")
    if not acc:
        path = "/sys/class/accel"
        if os.path.isdir(path) and os.listdir(path):
            return {"vendor": "tpu", "count": len(os.listdir(path)), "gpus": [], "name": None}
        return None
    m = re.match(r"^(v\d+[a-z]*)(?:pod)?-(\d+)$", acc)
    count = int(m.group(2)) if m else None
    return {"vendor": "tpu", "count": count, "gpus": [], "name": "tpu-" + acc}


def detect_accelerators() -> dict[str, Any]:
    for probe in (detect_nvidia, detect_amd, detect_tpu):
        found = probe()
        if found:
            return found
    return {"vendor": "none", "count": 0, "gpus": [], "name": None}


def cmd_facts(args: Args) -> int:
    import json

    facts = {"agent_version": VERSION, "python": list(sys.version_info[:3]),
             "hostname": os.uname().nodename, "accelerators": detect_accelerators()}
    print(json.dumps(facts, sort_keys=True))
    return 0


