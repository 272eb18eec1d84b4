"""A pipeline's cost: each step for its own duration (given in the task under
``_metadata.skyc.duration``, or measured on other hardware and scaled by the time
model), the total only when every step has one; never the steps' hourly prices
added up as if they ran at once. Real task files, the real fixture catalog, the
real optimizer and the real CLI in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from skyc.catalog import load_catalog
from skyc.errors import ConfigError
from skyc.model.plan import Plan
from skyc.optimizer import optimize
from skyc.optimizer.pipeline_cost import StepDuration, run_cost
from skyc.optimizer.timemodel import RELATIVE_THROUGHPUT
from skyc.task import load_tasks
from tests.optimizer.helpers import SMALL_CATALOG

ROOT = Path(__file__).resolve().parents[2]

PIPELINE = """\
name: prep-train
---
name: prep
outputs:
  s3://b/data: 100
_metadata:
  skyc:
    duration: 90m
run: echo prep
---
name: train
resources:
  accelerators: H100:8
_metadata:
  git_commit: 0123abc
  skyc:
    duration: {time: 10h, measured_on: "a100:8"}
run: echo train
---
name: eval
resources:
  accelerators: T4:1
{eval_meta}run: echo eval
"""


def _file(tmp_path: Path, eval_meta: str = "_metadata: {skyc: {duration: 30m}}\n",
          header: str = "") -> Path:
    path = tmp_path / "pipeline.yaml"
    path.write_text(header + PIPELINE.replace("{eval_meta}", eval_meta))
    return path


def _plan(path: Path) -> tuple[Plan, list[StepDuration | None]]:
    from skyc.optimizer.durations import task_duration

    tasks = list(load_tasks(path).tasks)
    plan = optimize(tasks, load_catalog(SMALL_CATALOG), infra="aws")
    return plan, [task_duration(task) for task in tasks]


def test_durations_load_from_the_task_and_other_metadata_is_kept(tmp_path: Path) -> None:
    tasks = load_tasks(_file(tmp_path)).tasks
    prep, train, ev = (t.duration for t in tasks)
    assert prep is not None and prep.hours == 1.5 and prep.reference is None
    assert train is not None and train.hours == 10.0 and train.reference is not None
    assert (train.reference.name, train.reference.count) == ("a100", 8.0)
    assert ev is not None and ev.hours == 0.5
    dumped = tasks[1].dump()["_metadata"]
    assert dumped["git_commit"] == "0123abc"
    assert dumped["skyc"]["duration"] == {"time": "10h", "measured_on": "a100:8"}


def test_a_task_without_metadata_dumps_as_before(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text("name: t\nresources:\n  accelerators: A100:8\nrun: echo\n")
    [task] = load_tasks(path).tasks
    assert task.duration is None and "_metadata" not in task.dump()


def test_serial_steps_cost_their_own_hours_plus_data_transfer(tmp_path: Path) -> None:
    plan, durations = _plan(_file(tmp_path))
    rc = run_cost(plan, durations)
    prep, train, ev = rc.steps
    p = [tp.placement for tp in plan.tasks]
    assert prep.hours == 1.5 and prep.duration_source == "task" and prep.duration_note is None
    # 10 h measured on A100:8, the plan runs H100:8: scaled by relative throughput
    want = 10.0 * RELATIVE_THROUGHPUT["A100"] / RELATIVE_THROUGHPUT["H100"]
    assert train.hours == pytest.approx(want) and train.duration_source == "time model"
    assert train.duration_note is not None and "10h on a100:8" in train.duration_note
    assert "scaled to H100:8 by the time model" in train.duration_note
    for step, placement in zip(rc.steps, p, strict=True):
        assert step.hourly_cost_total == placement.hourly_cost
        assert step.cost == pytest.approx(placement.hourly_cost * (step.hours or 0))
    assert rc.missing_duration == []
    assert rc.total_hours == pytest.approx(1.5 + want + 0.5)
    assert rc.total_cost == pytest.approx(sum(s.cost or 0 for s in rc.steps) + plan.egress_cost)
    # not the hourly prices added up as if the steps ran at once
    assert rc.total_cost != pytest.approx(plan.hourly_cost)
    assert ev.cost == pytest.approx(p[2].hourly_cost * 0.5)


def test_tasks_at_once_take_as_long_as_the_longest(tmp_path: Path) -> None:
    plan, durations = _plan(_file(tmp_path))
    rc = run_cost(plan, durations, "parallel")
    assert rc.execution == "parallel"
    assert rc.total_hours == pytest.approx(max(s.hours or 0 for s in rc.steps))
    assert rc.total_cost == pytest.approx(sum(s.cost or 0 for s in rc.steps) + plan.egress_cost)


def test_no_total_when_a_step_has_no_duration(tmp_path: Path) -> None:
    plan, durations = _plan(_file(tmp_path, eval_meta=""))
    rc = run_cost(plan, durations)
    assert rc.missing_duration == ["eval"]
    assert rc.total_cost is None and rc.total_hours is None
    assert rc.steps[2].hours is None and rc.steps[2].cost is None
    assert rc.steps[0].cost is not None  # the others are still priced


def test_the_same_accelerator_needs_no_scaling(tmp_path: Path) -> None:
    plan, _ = _plan(_file(tmp_path))
    rc = run_cost(plan, [None, StepDuration(4.0, ("H100", 8.0), "4h"), None])
    assert rc.steps[1].hours == 4.0 and rc.steps[1].duration_source == "task"


def test_an_accelerator_the_time_model_does_not_know_is_refused(tmp_path: Path) -> None:
    plan, _ = _plan(_file(tmp_path))
    with pytest.raises(ConfigError) as err:
        run_cost(plan, [None, StepDuration(4.0, ("Z9000", 8.0), "4h"), None])
    assert "_metadata.skyc.duration.measured_on" in str(err.value)
    assert "Z9000" in str(err.value) and err.value.hint and "duration: 6h" in err.value.hint


@pytest.mark.parametrize(("value", "message"), [
    ("6", "a duration needs a unit"),
    ("'6 hours'", "expected a duration like '6h'"),
    ("0h", "longer than 0"),
    ("100000d", "longer than ten years"),
    ("{time: 1h, on: 'A100:8'}", "write measured_on"),
    ("{time: 1h, measured_on: '80GB+'}", "measured_on names an accelerator"),
    ("{tim: 1h}", "did you mean 'time'?"),
])
def test_bad_durations_are_clear_errors(tmp_path: Path, value: str, message: str) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(f"name: t\n_metadata:\n  skyc:\n    duration: {value}\nrun: echo\n")
    r = _skyc(tmp_path, "validate", str(path))
    assert r.returncode == 1, r
    assert "_metadata.skyc.duration" in r.stderr and message in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_a_misspelt_metadata_key_suggests_the_field(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text("name: t\nmetadata: {}\nrun: echo\n")
    r = _skyc(tmp_path, "validate", str(path))
    assert r.returncode == 1 and "did you mean '_metadata'?" in r.stderr, r.stderr


def _skyc(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AWS_", "GOOGLE_", "AZURE_", "KUBECONFIG"))}
    env.update(HOME=str(tmp_path), SKYC_HOME=str(tmp_path / ".skyc"), PYTHONPATH=str(ROOT),
               COLUMNS="200")
    return subprocess.run([sys.executable, "-m", "skyc", *args], capture_output=True,
                          text=True, env=env, timeout=120, cwd=ROOT)


def _plan_cli(tmp_path: Path, path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return _skyc(tmp_path, "plan", str(path), "--catalog", str(SMALL_CATALOG), "--infra",
                 "aws", "--no-diff", *extra)


def test_plan_table_shows_each_step_and_the_total(tmp_path: Path) -> None:
    r = _plan_cli(tmp_path, _file(tmp_path))
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "pipeline: each step for its duration" in out
    assert all(h in out for h in ("duration", "from", "cost", "$/hr/node", "$/hr total"))
    assert "time model" in out and "train: 10h on a100:8 in the task, scaled to H100:8" in out
    doc = json.loads(_plan_cli(tmp_path, _file(tmp_path), "--format", "json").stdout)
    total = doc["run_cost"]["total_cost"]
    [line] = [x for x in out.splitlines() if x.startswith("total: ")]
    assert line.startswith(f"total: ${total:,.2f} for about ") and "one after another" in line


def test_plan_says_which_steps_lack_a_duration(tmp_path: Path) -> None:
    r = _plan_cli(tmp_path, _file(tmp_path, eval_meta=""))
    assert r.returncode == 0, r.stderr
    [line] = [x for x in r.stdout.splitlines() if x.startswith("no total: ")]
    assert "no duration for step eval" in line and "_metadata.skyc.duration" in line
    assert not any(x.startswith("total: ") for x in r.stdout.splitlines())


def test_plan_json_has_the_run_cost(tmp_path: Path) -> None:
    r = _plan_cli(tmp_path, _file(tmp_path), "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["format_version"] == "2.4"
    rc = doc["run_cost"]
    assert rc["execution"] == "serial" and rc["missing_duration"] == []
    assert [s["name"] for s in rc["steps"]] == ["prep", "train", "eval"]
    assert [s["duration_source"] for s in rc["steps"]] == ["task", "time model", "task"]
    for s, t in zip(rc["steps"], doc["tasks"], strict=True):
        assert s["hourly_cost_total"] == t["placement"]["hourly_cost_total"]
        assert s["hourly_cost_per_node"] == t["placement"]["hourly_cost_per_node"]
        assert s["cost"] == pytest.approx(s["hourly_cost_total"] * s["hours"], rel=1e-5)
    assert rc["total_hours"] == pytest.approx(sum(s["hours"] for s in rc["steps"]))
    assert rc["total_cost"] == pytest.approx(
        sum(s["cost"] for s in rc["steps"]) + doc["egress_cost"], rel=1e-5)
    assert rc["egress_cost"] == doc["egress_cost"]


def test_plan_json_of_a_parallel_header(tmp_path: Path) -> None:
    header_file = _file(tmp_path)
    header_file.write_text(header_file.read_text().replace(
        "name: prep-train\n", "name: prep-train\nexecution: parallel\n", 1))
    r = _plan_cli(tmp_path, header_file, "--format", "json")
    assert r.returncode == 0, r.stderr
    rc = json.loads(r.stdout)["run_cost"]
    assert rc["execution"] == "parallel"
    assert rc["total_hours"] == pytest.approx(max(s["hours"] for s in rc["steps"]))


def test_one_task_with_a_duration_gets_its_total(tmp_path: Path) -> None:
    path = tmp_path / "one.yaml"
    path.write_text("name: t\nresources:\n  accelerators: A100:8\n"
                    "_metadata:\n  skyc:\n    duration: 1h30m\nrun: echo\n")
    r = _plan_cli(tmp_path, path)
    assert r.returncode == 0, r.stderr
    assert "pipeline:" not in r.stdout  # one task: its own table is enough
    # p4d.24xlarge in us-west-2 at $30.00/hr in the fixture catalog
    assert "total: $45.00 for about 1.5 h" in r.stdout.splitlines()
    path.write_text("name: t\nresources:\n  accelerators: A100:8\nrun: echo\n")
    r = _plan_cli(tmp_path, path)
    assert r.returncode == 0, r.stderr
    assert not [x for x in r.stdout.splitlines() if x.startswith(("total:", "no total:"))]


def test_the_pull_request_comment_gives_the_run_cost(tmp_path: Path) -> None:
    r = _plan_cli(tmp_path, _file(tmp_path), "--format", "markdown")
    assert r.returncode == 0, r.stderr
    doc = json.loads(_plan_cli(tmp_path, _file(tmp_path), "--format", "json").stdout)
    [line] = [x for x in r.stdout.splitlines() if x.startswith("**Run cost**")]
    assert "(the steps one after another)" in line
    assert f"total ${doc['run_cost']['total_cost']:,.2f} for about " in line
    assert "prep $" in line and "eval $" in line and "for 30 min" in line
    r = _plan_cli(tmp_path, _file(tmp_path, eval_meta=""), "--format", "markdown")
    assert "no total: no duration for eval" in r.stdout
