"""Resource overrides from the command line (sky launch's --gpus, --cpus, ...) and --env-file."""

from __future__ import annotations

from pathlib import Path

import pytest

from skyc.errors import TaskSpecError
from skyc.task import load_tasks
from skyc.task.overrides import resource_overrides


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "t.yaml"
    path.write_text(text)
    return path


def test_overrides_replace_fields_everywhere_they_are_set(tmp_path: Path) -> None:
    path = _write(tmp_path, "num_nodes: 1\nresources:\n  cpus: 4\n  any_of:\n"
                            "    - {accelerators: A100:8, infra: aws}\n"
                            "    - {infra: gcp}\nrun: x\n")
    over = resource_overrides(gpus="H100:8", cpus="8+", use_spot=True, num_nodes=2,
                              disk_size=200)
    task = load_tasks(path, overrides=over).tasks[0]
    assert task.num_nodes == 2
    cands = task.candidates()
    assert {c.accelerator.name for c in cands if c.accelerator} == {"H100"}
    assert all(c.use_spot for c in cands)
    assert all(c.cpus is not None and c.cpus.value == 8 and c.cpus.at_least for c in cands)
    assert task.resources.any_of is not None and task.resources.any_of[1].infra is not None
    assert load_tasks(path).tasks[0].num_nodes == 1  # nothing given, nothing changed


def test_a_bad_override_is_reported_like_a_bad_field(tmp_path: Path) -> None:
    path = _write(tmp_path, "run: x\n")
    with pytest.raises(TaskSpecError) as info:
        load_tasks(path, overrides=resource_overrides(gpus="A100:x"))
    assert "resources.accelerators" in str(info.value.problems[0].render())
