"""SkyPilot's service: and pool: sections, and relative file_mounts targets."""

from __future__ import annotations

from pathlib import Path

import pytest

from skyc.apply.preflight import task_problems
from skyc.errors import TaskSpecError
from skyc.task import load_tasks


def _load(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "task.yaml"
    path.write_text(text)
    try:
        load_tasks(path)
    except TaskSpecError as exc:
        return [p.render() for p in exc.problems]
    return []


def test_autoscaling_without_target_qps_is_refused(tmp_path: Path) -> None:
    problems = _load(tmp_path, "service:\n  readiness_probe: /\n  replica_policy:\n"
                               "    min_replicas: 1\n    max_replicas: 3\nrun: x\n")
    assert len(problems) == 1
    assert "service.replica_policy" in problems[0] and "target_qps_per_replica" in problems[0]


def test_autoscaling_with_target_qps_loads(tmp_path: Path) -> None:
    assert _load(tmp_path, "service:\n  readiness_probe: /\n  replica_policy:\n"
                           "    min_replicas: 1\n    max_replicas: 3\n"
                           "    target_qps_per_replica: 2.5\nrun: x\n") == []


@pytest.mark.parametrize(("body", "needle"), [
    ("  replicas: 2\n  replica_policy:\n    min_replicas: 2\n", "not both"),
    ("  replica_policy:\n    min_replicas: 3\n    max_replicas: 2\n"
     "    target_qps_per_replica: 1\n", "at least min_replicas"),
    ("  replica_policy:\n    max_replicas: 2\n", "min_replicas: required"),
    ("  replicas: -1\n", "service.replicas"),
    ("  readiness_probe: {timeout_seconds: 5}\n", "readiness_probe"),
    ("  replicas: 2\n  bogus: 1\n", "service.bogus: unknown field"),
])
def test_service_is_checked_by_skypilots_rules(tmp_path: Path, body: str, needle: str) -> None:
    problems = _load(tmp_path, "service:\n" + body + "run: x\n")
    assert problems and any(needle in p for p in problems), problems


def test_pool_is_validated_and_refused_at_apply(tmp_path: Path) -> None:
    path = tmp_path / "pool.yaml"
    path.write_text("pool:\n  workers: 3\nsetup: echo ready\n")
    task = load_tasks(path).tasks[0]
    assert task.pool is not None and task.pool.workers == 3
    problems = task_problems(task)
    assert any(p.startswith("pool:") and "does not run pools" in p for p in problems)


@pytest.mark.parametrize(("body", "needle"), [
    ("pool:\n  workers: -1\n", "pool.workers"),
    ("pool:\n  size: 2\n", "pool.size: unknown field"),
    ("pool:\n  min_workers: 3\n  max_workers: 1\n", "at least min_workers"),
])
def test_pool_rules(tmp_path: Path, body: str, needle: str) -> None:
    problems = _load(tmp_path, body)
    assert any(needle in p for p in problems), problems


def test_relative_file_mount_targets_go_under_the_workdir(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text("file_mounts:\n  ./data: /tmp\n  relative_dir: /tmp\n  /abs: /tmp\n"
                    "  ~/home: /tmp\nrun: x\n")
    task = load_tasks(path).tasks[0]
    assert sorted(task.file_mounts) == ["/abs", "~/home", "~/sky_workdir/data",
                                        "~/sky_workdir/relative_dir"]


def test_a_file_mount_target_may_not_leave_the_workdir(tmp_path: Path) -> None:
    problems = _load(tmp_path, "file_mounts:\n  ../up: /tmp\nrun: x\n")
    assert len(problems) == 1 and "leaves ~/sky_workdir" in problems[0]


def test_a_pools_run_section_is_ignored_with_a_warning(tmp_path: Path) -> None:
    """As SkyPilot: a pool's workers only run setup, so `run` is warned about and
    dropped, not refused."""
    path = tmp_path / "pool.yaml"
    path.write_text("pool:\n  workers: 2\nsetup: echo ready\nrun: echo work\n")
    loaded = load_tasks(path)
    assert loaded.tasks[0].run is None and loaded.tasks[0].setup == "echo ready"
    [warning] = [w for w in loaded.warnings if w.path == "run"]
    assert "it is ignored" in warning.message and warning.line == 4
