"""Task (skyc.task) -> JobSpec, with real task files."""

from __future__ import annotations

from pathlib import Path

import pytest

from skyc.errors import UnsupportedFeature
from skyc.runtime import job_spec_from_task
from skyc.task import load_tasks


def load(tmp_path: Path, text: str) -> object:
    path = tmp_path / "task.yaml"
    path.write_text(text)
    return load_tasks(path, secrets={"HF_TOKEN": "hf-secret"}).tasks[0]


def test_task_to_job_spec(tmp_path: Path) -> None:
    task = load(tmp_path, (
        "name: train\nworkdir: ./src\nnum_nodes: 2\n"
        "envs:\n  LR: 0.1\nsecrets:\n  HF_TOKEN: null\n"
        "file_mounts:\n  ~/data: ./data\n"
        "setup: pip install -r requirements.txt\nrun: python train.py\n"))
    spec = job_spec_from_task(task)
    assert spec.name == "train" and spec.workdir == "./src"
    assert spec.file_mounts == {"~/data": "./data"}
    assert spec.envs == {"LR": "0.1"}
    assert spec.secret_values() == {"HF_TOKEN": "hf-secret"}
    assert "hf-secret" not in spec.model_dump_json()
    assert spec.setup and spec.run == "python train.py"


def test_git_workdir_is_unsupported(tmp_path: Path) -> None:
    task = load(tmp_path, "workdir:\n  url: https://github.com/org/repo\n  ref: main\nrun: ls\n")
    with pytest.raises(UnsupportedFeature, match="workdir"):
        job_spec_from_task(task)


@pytest.mark.parametrize("mount", ["s3://bucket/data", "{source: s3://bucket/data}"])
def test_bucket_mounts_are_unsupported(tmp_path: Path, mount: str) -> None:
    task = load(tmp_path, f"file_mounts:\n  /data: {mount}\nrun: ls /data\n")
    with pytest.raises(UnsupportedFeature, match="/data"):
        job_spec_from_task(task)
