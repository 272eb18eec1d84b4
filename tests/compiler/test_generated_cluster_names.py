"""A task without a name gets a cluster name of its own, ``skyc-<hash>-<user>`` (as
SkyPilot's ``sky-<hash>-<user>``), never a default shared by everyone: the same for
the same task and owner, so a plan and the apply after it name one cluster.

Task files are loaded by the real loader; the config is a real file in a temporary
``SKYC_HOME``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from skyc.errors import SkycError
from skyc.model.cluster_names import cluster_name_for, cluster_names_for
from skyc.task import Task, load_tasks

GENERATED = re.compile(r"^skyc-[0-9a-f]{6}-[a-z0-9-]+$")


def _task(tmp_path: Path, text: str, name: str = "task.yaml") -> Task:
    path = tmp_path / name
    path.write_text(text)
    return load_tasks(path).tasks[0]


def test_an_unnamed_task_gets_a_name_of_its_own(tmp_path: Path) -> None:
    train = _task(tmp_path, "run: python train.py\nresources: {cpus: 4}\n")
    name = cluster_name_for(train, None, owner="alice@laptop")
    assert GENERATED.match(name) and name.endswith("-alice") and len(name) <= 40
    again = _task(tmp_path, "run: python train.py\nresources: {cpus: 4}\n", "copy.yaml")
    assert cluster_name_for(again, None, owner="alice@laptop") == name  # plan, then apply
    other = _task(tmp_path, "run: python eval.py\nresources: {cpus: 4}\n", "eval.yaml")
    assert cluster_name_for(other, None, owner="alice@laptop") != name
    assert cluster_name_for(train, None, owner="bob@laptop").endswith("-bob")
    assert cluster_name_for(train, None, owner="bob@laptop")[:11] != name[:11]


def test_the_user_part_is_cut_and_made_safe(tmp_path: Path) -> None:
    task = _task(tmp_path, "run: echo hi\n")
    name = cluster_name_for(task, None, owner="Dana.O_Brien+ml@build-host")
    assert GENERATED.match(name) and name.endswith("-dana-o-brien-ml")
    long = cluster_name_for(task, None, owner="x" * 100)
    assert len(long) == 40 and GENERATED.match(long)
    assert re.fullmatch(r"skyc-[0-9a-f]{6}", cluster_name_for(task, None, owner="@host"))


def test_named_tasks_and_dash_c_keep_their_names(tmp_path: Path) -> None:
    named = _task(tmp_path, "name: My Train\nrun: echo hi\n")
    assert cluster_name_for(named, None, owner="alice") == "my-train"
    unnamed = _task(tmp_path, "run: echo hi\n", "b.yaml")
    assert cluster_name_for(unnamed, "dev", owner="alice") == "dev"
    with pytest.raises(SkycError, match="not valid"):
        cluster_name_for(unnamed, "Dev_1", owner="alice")
    # A name with nothing left keeps its former name; two such are refused on one
    # cluster (the apply's own check, tested with the CLI).
    nothing_left = _task(tmp_path, "name: ___\nrun: echo hi\n", "c.yaml")
    assert cluster_name_for(nothing_left, None, owner="alice") == "skyc-cluster"


def test_the_owner_comes_from_the_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                         ) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text("user: ci-runner@example\n")
    monkeypatch.setenv("SKYC_HOME", str(home))
    task = _task(tmp_path, "run: echo hi\n")
    assert cluster_name_for(task, None) == cluster_name_for(task, None, owner="ci-runner@example")
    assert cluster_name_for(task, None).endswith("-ci-runner")


def test_a_pipeline_of_unnamed_tasks(tmp_path: Path) -> None:
    first = _task(tmp_path, "run: echo one\n", "1.yaml")
    second = _task(tmp_path, "run: echo two\n", "2.yaml")
    names = cluster_names_for([first, second, first], owner="alice")
    assert names[0] != names[1] and names[2] == f"{names[0]}-2"
    assert all(GENERATED.match(n) for n in names[:2])
