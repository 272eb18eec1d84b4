"""A task's volumes, as SkyPilot writes them: an existing volume by name, or one made
with the cluster ({size, labels, config}); mounted by Kubernetes pods (the claims and
pods are validated against the API's schemas in tests/compiler/test_kubernetes_lowering
.py, case kubernetes/volumes), refused elsewhere with the reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from skyc.compiler import build_stack
from skyc.errors import TaskSpecError, UnsupportedFeature
from skyc.model.plan import Placement
from skyc.settings.config import SkycConfig
from skyc.task import load_tasks


def _task(tmp_path: Path, volumes: str, nodes: int = 1) -> object:
    path = tmp_path / "task.yaml"
    path.write_text(f"num_nodes: {nodes}\nrun: echo hi\nvolumes:\n{volumes}")
    return load_tasks(path).tasks[0]


def test_named_and_ephemeral_volumes_become_claims(tmp_path: Path) -> None:
    task = _task(tmp_path, "  /mnt/data: team-datasets\n  /mnt/cache:\n    size: 100\n"
                 "    labels: {env: prod}\n    config: {access_mode: ReadWriteMany,"
                 " storage_class_name: fs-sc}\n")
    [candidate] = task.candidates()  # type: ignore[attr-defined]
    cache, data = candidate.volumes
    assert (data.target, data.name, data.size) == ("/mnt/data", "team-datasets", None)
    assert (cache.size, cache.access_mode, cache.storage_class, cache.labels) == (
        "100Gi", "ReadWriteMany", "fs-sc", {"env": "prod"})


@pytest.mark.parametrize(("volumes", "message"), [
    ("  ~/data: team-datasets\n", "a volume is mounted at an absolute path"),
    ("  /mnt/d: Team_Data\n", "is not a volume (PVC) name"),
    ("  /mnt/d: {labels: {a: b}}\n", "give a volume's name, or {size: ...}"),
    ("  /mnt/d: {size: lots}\n", "volumes./mnt/d.size: 'lots' is not a size"),
    ("  /mnt/d: {size: 1Gi, config: {access_mode: Everyone}}\n", "is not one of"),
    ("  /mnt/d: {size: 1Gi, type: nfs}\n", "unknown field 'type'"),
])
def test_a_volume_that_cannot_be_used_is_refused_naming_the_field(
        tmp_path: Path, volumes: str, message: str) -> None:
    with pytest.raises(TaskSpecError) as err:
        _task(tmp_path, volumes)
    assert message in str(err.value)


def test_volumes_off_kubernetes_and_shared_ones_without_rwx_are_refused(
        tmp_path: Path) -> None:
    task = _task(tmp_path, "  /mnt/cache: {size: 10Gi}\n", nodes=2)
    [candidate] = task.candidates()  # type: ignore[attr-defined]
    local = Placement(cloud="local", num_nodes=1, hourly_cost=0.0)
    with pytest.raises(UnsupportedFeature, match="volumes: local nodes mount no volumes"):
        build_stack("c", local, candidate, config=SkycConfig(), workspace=tmp_path / "ws")
    pods = Placement(cloud="kubernetes", region="ctx", num_nodes=2, hourly_cost=0.0,
                     vcpus=2, memory_gib=4)
    with pytest.raises(UnsupportedFeature, match=r"needs config\.access_mode: ReadWriteMany"):
        build_stack("c", pods, candidate, config=SkycConfig(), workspace=tmp_path / "ws")
