"""What a job sent to the controller cluster takes with it (skyc.jobs.shipping): the
task file with its secrets' values taken out and the paths of the files it names
pointing at their shipped copies; a pipeline's header document stays first."""

from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path

import pytest
import yaml

from skyc.jobs.shipping import bundle
from skyc.task import load_tasks


def _members(data: bytes) -> dict[str, bytes | None]:
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(data))) as tar:
        return {m.name: (tar.extractfile(m).read() if m.isfile() else None)  # type: ignore[union-attr]
                for m in tar.getmembers()}


def test_a_pipeline_ships_without_secret_values_and_with_its_files(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "run.sh").write_text("echo hi\n")
    (tmp_path / "labels.csv").write_text("a,b\n")
    task_file = tmp_path / "pipe.yaml"
    task_file.write_text("""\
name: pipe
---
name: prep
workdir: code
secrets:
  TOKEN: inline-secret-value
run: bash run.sh
---
name: train
file_mounts:
  ~/labels.csv: labels.csv
run: cat ~/labels.csv
""")
    tasks = load_tasks(task_file, require_values=True).tasks
    shipped = bundle(task_file, tasks)

    members = _members(shipped.data)
    text = members["pipe.yaml"]
    assert text is not None and b"inline-secret-value" not in text
    docs = list(yaml.safe_load_all(text))
    assert docs[0] == {"name": "pipe"}
    there = f"../tasks/{shipped.digest}"
    assert docs[1]["secrets"] == {"TOKEN": None}
    assert docs[1]["workdir"] == f"{there}/files/0/workdir"
    assert docs[2]["file_mounts"] == {"~/labels.csv": f"{there}/files/1/mount-0"}
    assert members["files/0/workdir/run.sh"] == b"echo hi\n"
    assert members["files/1/mount-0"] == b"a,b\n"
    assert shipped.task_file == f"{there}/pipe.yaml"
    assert bundle(task_file, tasks).digest == shipped.digest
