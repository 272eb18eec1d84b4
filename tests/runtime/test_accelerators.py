"""Accelerator detection by the node agent, from outputs recorded on real machines.

No GPU, TPU or ROCm stack can exist on this test machine, so the vendor tools are
small scripts on PATH that print those recorded outputs (tests/runtime/fixtures/
accelerators/: nvidia-smi ``--query-gpu=name,memory.total --format=csv,noheader``
from H100 / A100 / H200 hosts, and the ``rocm-smi`` concise table from an MI300X host).
The agent itself runs for real, as a subprocess, as it does on a node.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from skyc.runtime import agent

FIXTURES = Path(__file__).parent / "fixtures" / "accelerators"


def fake_tool(bindir: Path, name: str, fixture: str, expect_args: str) -> None:
    """A stand-in for a vendor tool: prints the recorded output for the expected arguments."""
    bindir.mkdir(exist_ok=True)
    script = bindir / name
    script.write_text(
        "#!/bin/sh\n"
        f'if [ "$*" != "{expect_args}" ]; then echo "unexpected args: $*" >&2; exit 2; fi\n'
        f'cat "{FIXTURES / fixture}"\n')
    script.chmod(0o755)


def facts(bindir: Path, extra_env: dict[str, str] | None = None) -> dict[str, Any]:
    env = {"PATH": f"{bindir}:/usr/bin:/bin", "HOME": str(bindir.parent)}
    env.update(extra_env or {})
    out = subprocess.run([sys.executable, agent.__file__, "facts"], capture_output=True,
                         env=env, check=True, timeout=60)
    result: dict[str, Any] = json.loads(out.stdout)["accelerators"]
    return result


NVIDIA_ARGS = "--query-gpu=name,memory.total --format=csv,noheader"


@pytest.mark.parametrize(("fixture", "name", "count", "memory"), [
    ("nvidia-smi_h100x8.txt", "H100", 8, 81559),
    ("nvidia-smi_a100-80gbx2.txt", "A100-80GB", 2, 81920),
    ("nvidia-smi_h200x1.txt", "H200", 1, 143771),
])
def test_nvidia(tmp_path: Path, fixture: str, name: str, count: int, memory: int) -> None:
    fake_tool(tmp_path / "bin", "nvidia-smi", fixture, NVIDIA_ARGS)
    acc = facts(tmp_path / "bin")
    assert acc["vendor"] == "nvidia"
    assert acc["name"] == name and acc["count"] == count
    assert {g["memory_mib"] for g in acc["gpus"]} == {memory}


def test_amd_from_rocm_smi(tmp_path: Path) -> None:
    fake_tool(tmp_path / "bin", "rocm-smi", "rocm-smi_mi300xx4.txt", "")
    acc = facts(tmp_path / "bin")
    assert acc["vendor"] == "amd" and acc["count"] == 4 and acc["name"] == "MI300X"
    assert acc["gpus"][0]["name"] == "AMD Instinct MI300X"


def test_failing_nvidia_smi_is_not_a_gpu(tmp_path: Path) -> None:
    # nvidia-smi present but the driver is not loaded: it exits non-zero
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "nvidia-smi").write_text(
        "#!/bin/sh\necho 'NVIDIA-SMI has failed because it couldn't communicate with the "
        "NVIDIA driver.' >&2\nexit 9\n")
    (bindir / "nvidia-smi").chmod(0o755)
    if os.path.exists("/dev/kfd"):
        pytest.skip("this machine has /dev/kfd")
    assert facts(bindir)["vendor"] == "none"


def test_tpu_vm_environment(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    acc = facts(tmp_path / "bin", {"TPU_ACCELERATOR_TYPE": "v5litepod-8"})
    assert acc == {"vendor": "tpu", "count": 8, "gpus": [], "name": "tpu-v5litepod-8"}


def test_no_accelerator(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    if os.path.exists("/dev/kfd") or os.path.isdir("/sys/class/accel"):
        pytest.skip("this machine exposes accelerator devices")
    assert facts(tmp_path / "bin") == {"vendor": "none", "count": 0, "gpus": [], "name": None}
