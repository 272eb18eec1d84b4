"""Accelerator detection by the node agent, from outputs recorded on real machines.

No GPU, TPU or ROCm stack can exist on this test machine, so the vendor tools are
small scripts on PATH that print those recorded outputs (tests/runtime/fixtures/
accelerators/: nvidia-smi ``--query-gpu=name,memory.total --format=csv,noheader``
from H100 / A100 / H200 hosts, and the ``rocm-smi`` concise table from an MI300X host).
The AMD ``amd-smi static --asic --vram`` (8 x MI300X) and ``rocm-smi --showmeminfo vram``
outputs are written in the shape ROCm 6's tools print (field names, units, layout as
published by AMD and by MI300X users); no MI300X host was available to record them.
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

from skyc.model.nodes import ClusterInfo
from skyc.runtime import JobSpec, agent, run_job

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


def dispatching_tool(bindir: Path, name: str, outputs: dict[str, str]) -> None:
    """A vendor tool that prints a recorded output per argument string (exit 2 otherwise)."""
    bindir.mkdir(exist_ok=True)
    cases = "".join(f'  "{args}") cat "{FIXTURES / fixture}" ;;\n'
                    for args, fixture in outputs.items())
    script = bindir / name
    script.write_text(f'#!/bin/sh\ncase "$*" in\n{cases}  *) echo "unexpected args: $*" >&2; '
                      "exit 2 ;;\nesac\n")
    script.chmod(0o755)


AMD_SMI_ARGS = "static --asic --vram"


def test_amd_mi300x_from_amd_smi(tmp_path: Path) -> None:
    fake_tool(tmp_path / "bin", "amd-smi", "amd-smi_static_mi300xx8.txt", AMD_SMI_ARGS)
    acc = facts(tmp_path / "bin")
    assert acc["vendor"] == "amd" and acc["name"] == "MI300X" and acc["count"] == 8
    assert [g["memory_mib"] for g in acc["gpus"]] == [196592] * 8  # 192 GiB HBM3 each
    assert {g["name"] for g in acc["gpus"]} == {"AMD Instinct MI300X"}


def test_amd_memory_from_rocm_smi_when_amd_smi_is_missing(tmp_path: Path) -> None:
    dispatching_tool(tmp_path / "bin", "rocm-smi", {
        "": "rocm-smi_mi300xx4.txt", "--showmeminfo vram": "rocm-smi_meminfo_mi300xx4.txt"})
    acc = facts(tmp_path / "bin")
    assert acc["vendor"] == "amd" and acc["count"] == 4 and acc["name"] == "MI300X"
    assert [g["memory_mib"] for g in acc["gpus"]] == [206141652992 // 2**20] * 4


def test_amd_smi_spellings() -> None:
    older = "GPU: 0\n    ASIC:\n        Market Name: AMD Instinct MI300X VF\n"
    assert agent.parse_amd_smi(older) == [{"name": "AMD Instinct MI300X VF", "memory_mib": None}]
    assert agent.canonical_gpu_name("AMD Instinct MI300X VF", 196592) == "MI300X"
    assert agent.parse_amd_smi("no GPUs here\n") == []


@pytest.mark.parametrize(("env", "expected"), [
    ({"SKYPILOT_NUM_GPUS_PER_NODE": "8"}, "0,1,2,3,4,5,6,7"),
    ({"SKYPILOT_NUM_GPUS_PER_NODE": "2"}, "0,1"),
    ({"SKYPILOT_NUM_GPUS_PER_NODE": "0.5"}, "0"),
    ({"SKYPILOT_NUM_GPUS_PER_NODE": "0"}, "0,1,2,3,4,5,6,7"),
    ({"SKYPILOT_NUM_GPUS_PER_NODE": "16"}, "0,1,2,3,4,5,6,7"),
    ({"HIP_VISIBLE_DEVICES": "3"}, None),
    ({"CUDA_VISIBLE_DEVICES": "1"}, None),
])
def test_rocm_visibility(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                         env: dict[str, str], expected: str | None) -> None:
    fake_tool(tmp_path / "bin", "amd-smi", "amd-smi_static_mi300xx8.txt", AMD_SMI_ARGS)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:/usr/bin:/bin")
    extra = agent.rocm_env(env)
    if expected is None:
        assert extra == {}
    else:
        assert extra == {"HIP_VISIBLE_DEVICES": expected, "ROCR_VISIBLE_DEVICES": expected}


def test_no_rocm_variables_without_an_amd_gpu(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    fake_tool(tmp_path / "bin", "nvidia-smi", "nvidia-smi_h100x8.txt", NVIDIA_ARGS)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:/usr/bin:/bin")
    if os.path.exists("/dev/kfd"):
        pytest.skip("this machine has /dev/kfd")
    assert agent.rocm_env({"SKYPILOT_NUM_GPUS_PER_NODE": "8"}) == {}


def test_the_rocm_environment_reaches_the_job(tmp_path: Path, local_cluster: ClusterInfo,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A local node whose amd-smi reports 8 MI300X: the job's run sees the ROCm
    device variables for the GPUs it asked for, on every node."""
    bindir = tmp_path / "bin"
    fake_tool(bindir, "amd-smi", "amd-smi_static_mi300xx8.txt", AMD_SMI_ARGS)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    for var in ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"):
        monkeypatch.delenv(var, raising=False)
    lines: list[tuple[str, str]] = []
    spec = JobSpec(num_gpus_per_node=4,
                   run='echo "hip=$HIP_VISIBLE_DEVICES rocr=$ROCR_VISIBLE_DEVICES"')
    result = run_job(local_cluster, spec,
                     on_line=lambda label, line: lines.append((label, line)))
    assert result.status == "SUCCEEDED"
    seen = [line for _, line in lines if line.startswith("hip=")]
    assert seen == ["hip=0,1,2,3 rocr=0,1,2,3"] * 2
