"""A pipeline's hourly headline is its peak (the dearest set of steps that run at the
same time), never the serial steps' hourly prices added up: in the plan, the terminal
verdict, ``--format json`` (``hourly_cost``, ``cost.total``) and the markdown comment.
Tasks that run at once still add up. Real task files, the fixture catalog, the real
optimizer and the CLI in a subprocess."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path
from typing import Any

import pytest

from skyc.catalog import load_catalog
from skyc.optimizer import optimize
from skyc.optimizer.concurrency import peak_tasks
from skyc.review.report import cost_section
from skyc.task import load_tasks
from tests.optimizer.helpers import SMALL_CATALOG
from tests.optimizer.test_pipeline_cost import _file, _plan_cli


def test_peak_of_a_chain_a_diamond_and_tasks_at_once() -> None:
    assert peak_tasks([1.0, 5.0, 2.0], [(0, 1), (1, 2)]) == [1]
    assert peak_tasks([1.0, 5.0, 2.0], []) == [0, 1, 2]
    diamond = [(0, 1), (0, 2), (1, 3), (2, 3)]
    assert peak_tasks([1.0, 2.0, 2.5, 1.0], diamond) == [1, 2]   # the two branches at once
    assert peak_tasks([9.0, 2.0, 2.5, 1.0], diamond) == [0]
    assert peak_tasks([], []) == []


def _antichain(mask: tuple[int, ...], n: int, edges: list[tuple[int, int]]) -> bool:
    reach = {(u, v) for u, v in edges}
    for k in range(n):  # transitive closure
        reach |= {(u, v) for u, w in reach for w2, v in reach if w == w2 == k}
    return not any((u, v) in reach or (v, u) in reach for u, v in itertools.combinations(mask, 2))


@pytest.mark.parametrize("seed", range(25))
def test_peak_is_the_dearest_antichain(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(1, 7)
    edges = [(u, v) for u in range(n) for v in range(u + 1, n) if rng.random() < 0.35]
    hourly = [round(rng.uniform(0.1, 10), 3) for _ in range(n)]
    got = peak_tasks(hourly, edges)
    assert _antichain(tuple(got), n, edges)
    want = max(sum(hourly[i] for i in sub) for r in range(1, n + 1)
               for sub in itertools.combinations(range(n), r) if _antichain(sub, n, edges))
    assert sum(hourly[i] for i in got) == pytest.approx(want)


def _serial_plan(tmp_path: Path) -> Any:
    tasks = list(load_tasks(_file(tmp_path)).tasks)
    return optimize(tasks, load_catalog(SMALL_CATALOG), infra="aws")


def test_a_pipelines_hourly_cost_is_its_dearest_step(tmp_path: Path) -> None:
    plan = _serial_plan(tmp_path)
    each = [tp.placement.hourly_cost for tp in plan.tasks]
    assert plan.hourly_cost == pytest.approx(max(each))
    assert plan.hourly_cost != pytest.approx(sum(each))
    assert plan.peak_tasks == [each.index(max(each))]
    at_once = optimize(list(load_tasks(_file(tmp_path)).tasks), load_catalog(SMALL_CATALOG),
                       infra="aws", edges=[])
    assert at_once.hourly_cost == pytest.approx(sum(tp.placement.hourly_cost
                                                    for tp in at_once.tasks))


def test_plan_json_total_is_the_peak(tmp_path: Path) -> None:
    r = _plan_cli(tmp_path, _file(tmp_path), "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    each = [t["placement"]["hourly_cost"] for t in doc["tasks"]]
    assert doc["format_version"] == "2.4"
    total = doc["cost"]["total"]
    assert total["basis"] == "peak" and total["at_once"] == ["train"]
    assert total["after"]["hourly"] == pytest.approx(max(each))
    assert total["after"]["hourly"] != pytest.approx(sum(each))
    assert doc["hourly_cost"] == doc["hourly_cost_total"] == pytest.approx(max(each))
    assert doc["peak_tasks"] == [1]
    assert [c["after"]["hourly"] for c in doc["cost"]["clusters"]] == pytest.approx(each)


def test_plan_json_of_tasks_at_once_adds_them_up(tmp_path: Path) -> None:
    path = _file(tmp_path)
    path.write_text(path.read_text().replace("name: prep-train\n",
                                             "name: prep-train\nexecution: parallel\n", 1))
    doc = json.loads(_plan_cli(tmp_path, path, "--format", "json").stdout)
    total = doc["cost"]["total"]
    each = [t["placement"]["hourly_cost"] for t in doc["tasks"]]
    assert total["basis"] == "all at once" and total["at_once"] == ["prep", "train", "eval"]
    assert total["after"]["hourly"] == pytest.approx(sum(each))


def test_terminal_and_markdown_say_peak_not_sum(tmp_path: Path) -> None:
    doc = json.loads(_plan_cli(tmp_path, _file(tmp_path), "--format", "json").stdout)
    each = [t["placement"]["hourly_cost"] for t in doc["tasks"]]
    r = _plan_cli(tmp_path, _file(tmp_path))
    flat = " ".join(r.stdout.split())
    assert f"at the peak ${max(each):.4f}/hr total (train: the steps run one after another" in flat
    assert f"{sum(each):.4f}" not in flat
    md = _plan_cli(tmp_path, _file(tmp_path), "--format", "markdown").stdout
    verdict = md.splitlines()[1]
    assert f"${max(each):.4f}/hour at the peak" in verdict
    assert "`train`, the dearest step: the steps run one after another" in verdict
    assert f"{sum(each):.4f}" not in md


def test_cost_section_without_a_peak_adds_every_cluster(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKYC_HOME", str(tmp_path / "home"))
    tasks = [{"name": n, "placement": {"hourly_cost": c}} for n, c in (("a", 1.0), ("b", 3.0))]
    old = cost_section({"tasks": tasks}, ["a", "b"])["total"]
    assert (old["after"]["hourly"], old["basis"]) == (4.0, "all at once")
    peak = cost_section({"tasks": tasks, "peak_tasks": [1]}, ["a", "b"], hours=2)["total"]
    assert (peak["after"]["hourly"], peak["basis"], peak["at_once"]) == (3.0, "peak", ["b"])
    assert peak["run_total"] == 8.0              # each cluster for the 2 hours given


@pytest.mark.parametrize("eval_meta", ["_metadata: {skyc: {duration: 30m}}\n", ""])
def test_a_cheaper_disabled_cloud_for_a_pipeline_compares_whole_runs(
        tmp_path: Path, eval_meta: str) -> None:
    from skyc.apply.infra import PlanScope, catalog_for
    from skyc.apply.scope_notes import cheaper_elsewhere, cheaper_line
    from skyc.optimizer.durations import task_duration
    from skyc.optimizer.pipeline_cost import run_cost
    from skyc.settings.config import SkycConfig

    path = tmp_path / "a100.yaml"
    path.write_text(
        "name: p\n---\nname: prep\noutputs: {s3://b/d: 10}\n"
        "_metadata: {skyc: {duration: 2h}}\nrun: echo\n---\n"
        "name: train\nresources: {accelerators: A100:8}\n"
        "_metadata: {skyc: {duration: 10h}}\nrun: echo\n---\n"
        f"name: eval\nresources: {{accelerators: T4:1}}\n{eval_meta}run: echo\n")
    tasks = list(load_tasks(path).tasks)
    config = SkycConfig()
    here = PlanScope(names=frozenset({"aws"}), disabled=("gcp", "azure"))
    plan = optimize(tasks, catalog_for(config, tasks, catalog_dir=SMALL_CATALOG, scope=here))
    found = cheaper_elsewhere(tasks, plan, here, config, infra=None, catalog_dir=SMALL_CATALOG,
                              target="cost", parallel=False)
    assert found is not None
    line = cheaper_line(found, plan)
    if eval_meta:   # every step has a duration: the whole runs are compared
        mine = run_cost(plan, [task_duration(t) for t in tasks]).total_cost
        assert found["compared_by"] == "run" and found["this_plan_cost"] == pytest.approx(mine)
        assert f"for the whole run (this plan: ${mine:,.2f})" in line
    else:           # an hour of each step, as the optimizer ranks them; never a "total"
        mine = sum(tp.placement.hourly_cost for tp in plan.tasks) + plan.egress_cost
        assert found["compared_by"] == "hour"
        assert found["this_plan_cost"] == pytest.approx(mine)
        assert "for an hour of each step" in line
    assert "/hr total" not in line and found["cost"] < found["this_plan_cost"]


def test_policy_total_and_daily_spend_count_the_peak() -> None:
    from skyc.model.plan import Placement
    from skyc.review.policy import Planned, Policy, Usage, evaluate

    planned = [Planned(name, Placement(cloud="aws", region="us-east-1", hourly_cost=cost))
               for name, cost in (("prep", 0.5), ("train", 30.0), ("eval", 0.7))]
    policy = Policy.model_validate({"max_hourly_cost_total": 31,
                                    "users": {"ann": {"max_spend_per_day": 740}}})
    # The steps added up ($31.2/hour, $748.80/day) would break both rules...
    assert {v.rule for v in evaluate(policy, planned, Usage(), "ann")} == {
        "max_hourly_cost_total", "users.ann"}
    # ...but they run one after another: at the peak only train's $30/hour runs.
    assert evaluate(policy, planned, Usage(), "ann", at_once=[1]) == []
    strict = Policy.model_validate({"max_hourly_cost_total": 20})
    [v] = evaluate(strict, planned, Usage(), None, at_once=[1])
    assert v.message.startswith("$30.0000/hour at the peak (train; the others run before")


def test_plan_policy_total_of_a_pipeline_is_its_peak(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    doc = json.loads(_plan_cli(tmp_path, _file(tmp_path), "--format", "json").stdout)
    each = [t["placement"]["hourly_cost"] for t in doc["tasks"]]
    policy.write_text(f"max_hourly_cost_total: {(max(each) + sum(each)) / 2}\n")
    r = _plan_cli(tmp_path, _file(tmp_path), "--policy", str(policy), "--format", "json")
    assert r.returncode == 0, r.stdout
    assert json.loads(r.stdout)["policy"]["ok"] is True
    policy.write_text(f"max_hourly_cost_total: {max(each) - 1}\n")
    r = _plan_cli(tmp_path, _file(tmp_path), "--policy", str(policy), "--format", "json")
    assert r.returncode == 1
    [v] = json.loads(r.stdout)["policy"]["violations"]
    assert v["rule"] == "max_hourly_cost_total" and "at the peak (train;" in v["message"]
