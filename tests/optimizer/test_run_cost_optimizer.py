"""With every task's duration known, the optimizer minimises the whole run (hourly price
x that task's hours on each offer, plus data transfer), or its time with --optimize
time; without one, it ranks per hour as before. The chain DP and the DAG integer
program agree with each other and with brute force. Real task files, the real fixture
catalog (or a real Catalog over random tables), the real solvers (PuLP's CBC)."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import pytest

from skyc.catalog import load_catalog
from skyc.catalog.catalog import Catalog
from skyc.optimizer import optimize, task_choices
from skyc.optimizer.chain import solve_chain
from skyc.optimizer.choice import Choice, Target
from skyc.optimizer.core import _weight
from skyc.optimizer.dag import solve_dag
from skyc.optimizer.durations import with_run_hours
from skyc.optimizer.pipeline_cost import StepDuration, step_hours
from skyc.optimizer.rank import best_per_location, top_preference
from skyc.task import load_tasks
from tests.optimizer.helpers import SMALL_CATALOG, FakeTask
from tests.optimizer.test_bruteforce import random_catalog, random_dag, random_tasks
from tests.optimizer.test_pipeline_cost import _skyc

TRAIN = """\
name: train
resources:
  accelerators: {{A100:8, H100:8}}
  use_spot: true
{meta}run: echo train
"""
MEASURED = '_metadata: {skyc: {duration: {time: 10h, measured_on: "A100:8"}}}\n'


def _task(tmp_path: Path, meta: str) -> Path:
    path = tmp_path / "train.yaml"
    path.write_text(TRAIN.format(meta=meta))
    return path


def _plan(tmp_path: Path, meta: str, target: Target = "cost"):  # type: ignore[no-untyped-def]
    tasks = list(load_tasks(_task(tmp_path, meta)).tasks)
    return optimize(tasks, load_catalog(SMALL_CATALOG), target=target, infra="aws")


def test_a_faster_dearer_gpu_is_the_cheaper_whole_run(tmp_path: Path) -> None:
    hourly = _plan(tmp_path, "")
    assert hourly.objective == "hourly"
    cheap = hourly.tasks[0].placement
    assert (cheap.instance_type, cheap.accelerators) == ("p4d.24xlarge", {"A100": 8.0})
    plan = _plan(tmp_path, MEASURED)
    assert plan.objective == "run"
    tp = plan.tasks[0]
    p = tp.placement
    assert (p.instance_type, p.accelerators) == ("p5.48xlarge", {"H100": 8.0})
    assert p.hourly_cost > cheap.hourly_cost                      # dearer per hour...
    d = StepDuration(hours=10.0, measured_on=("A100", 8.0), given_as="10h")
    run = {(a.zone, a.instance_type): a.hourly_cost * (step_hours("train", a, d) or 0.0)
           for a in [p, *tp.alternatives]}
    mine = run[(p.zone, p.instance_type)]
    assert min(run.values()) == pytest.approx(mine)               # ...the cheapest run
    assert mine < run[(cheap.zone, cheap.instance_type)]
    assert tp.reason.startswith(f"cheapest for the whole run: ${mine:,.2f}")
    assert "the cheapest per hour, p4d.24xlarge (A100:8) in aws/us-east-1/use1-az1" in tp.reason


def test_a_duration_on_whatever_is_chosen_keeps_the_hourly_choice(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "_metadata: {skyc: {duration: 10h}}\n")
    assert plan.objective == "run"
    assert plan.tasks[0].placement.instance_type == "p4d.24xlarge"
    assert plan.tasks[0].reason.startswith("cheapest for the whole run: $120.00 for 10.0 h")


def test_optimize_time_minimises_the_run_hours(tmp_path: Path) -> None:
    # The time model alone: the fastest GPU.
    assert _plan(tmp_path, "", "time").tasks[0].placement.instance_type == "p5.48xlarge"
    # Measured on A100:8: the H100 run is shorter.
    measured = _plan(tmp_path, MEASURED, "time").tasks[0]
    assert measured.placement.instance_type == "p5.48xlarge"
    assert measured.reason.startswith("fastest for the whole run: 3.1 h for $")
    # 10 h whatever is chosen: every offer takes as long, so the cheaper wins.
    same = _plan(tmp_path, "_metadata: {skyc: {duration: 10h}}\n", "time").tasks[0]
    assert same.placement.instance_type == "p4d.24xlarge"


def test_one_step_without_a_duration_ranks_every_step_per_hour(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("name: p\n---\n" + TRAIN.format(meta=MEASURED)
                    + "---\nname: eval\nresources:\n  accelerators: T4:1\nrun: echo\n")
    tasks = list(load_tasks(path).tasks)
    cat = load_catalog(SMALL_CATALOG)
    plan = optimize(tasks, cat, infra="aws")
    assert plan.objective == "hourly"
    assert plan.tasks[0].placement.instance_type == "p4d.24xlarge"
    same = optimize(tasks, cat, infra="aws", durations=[None, None])
    assert [t.placement for t in same.tasks] == [t.placement for t in plan.tasks]


def test_plan_says_why_a_dearer_row_was_chosen(tmp_path: Path) -> None:
    path = _task(tmp_path, MEASURED)
    r = _skyc(tmp_path, "plan", str(path), "--catalog", str(SMALL_CATALOG), "--no-diff")
    assert r.returncode == 0, r.stderr
    flat = " ".join(r.stdout.split())
    assert "note: cheapest for the whole run: $108.50 for 3.1 h" in flat
    assert "would take 10.0 h and cost $120.00" in flat
    r = _skyc(tmp_path, "plan", str(path), "--catalog", str(SMALL_CATALOG), "--no-diff",
              "--format", "json")
    doc = json.loads(r.stdout)
    assert doc["objective"] == "run"
    assert doc["tasks"][0]["reason"].startswith("cheapest for the whole run")
    assert doc["run_cost"]["total_cost"] == pytest.approx(108.5)


# --- the solvers agree ------------------------------------------------------------------

def _timed_tasks(rng: random.Random, n: int) -> tuple[list[FakeTask], list[StepDuration]]:
    tasks = random_tasks(rng, n)
    durations = [StepDuration(hours=round(rng.uniform(0.5, 40), 2), given_as="x",
                              measured_on=(rng.choice(("T4", "A100")), 1.0)
                              if rng.random() < 0.7 else None) for _ in tasks]
    return tasks, durations


def _options(tasks: list[FakeTask], cat: Catalog, durations: list[StepDuration],
             target: Target) -> list[list[Choice]]:
    names = [t.name or "" for t in tasks]
    every = [task_choices(t.candidates(), t.num_nodes, cat) for t in tasks]
    timed = with_run_hours(names, every, durations)
    assert timed is not None
    return [sorted(best_per_location(top_preference(c), target).values(),
                   key=lambda c: c.key(target)) for c in timed]


def _brute(options: list[list[Choice]], edges: list[tuple[int, int]], gb: list[float],
           cat: Catalog, target: Target) -> float:
    weight = _weight(cat, target)
    return min(sum(c.objective(target) for c in combo)
               + sum(weight(combo[u], combo[v], gb[u]) for u, v in edges)
               for combo in itertools.product(*options))


@pytest.mark.parametrize("seed", range(30))
def test_chain_dp_and_ilp_agree_on_the_run_cost(seed: int) -> None:
    rng = random.Random(5000 + seed)
    cat = random_catalog(rng)
    tasks, durations = _timed_tasks(rng, rng.randint(2, 4))
    target: Target = "cost" if seed % 3 else "time"
    options = _options(tasks, cat, durations, target)
    gb = [float(sum(t.outputs.values())) for t in tasks]
    edges = [(i, i + 1) for i in range(len(tasks) - 1)]
    weight = _weight(cat, target)
    dp, dp_total = solve_chain(options, gb, target, weight)
    moving = [(u, v) for u, v in edges if gb[u] > 0]
    ilp, ilp_total = solve_dag(options, moving, gb, target, weight)
    want = _brute(options, edges, gb, cat, target)
    assert dp_total == pytest.approx(want, abs=1e-6)
    assert ilp_total == pytest.approx(want, abs=1e-6)
    for picks in (dp, ilp):   # each solver's own picks cost what it says
        assert sum(c.objective(target) for c in picks) + sum(
            weight(picks[u], picks[v], gb[u]) for u, v in edges) == pytest.approx(want, abs=1e-6)
    plan = optimize(tasks, cat, target=target, durations=durations)
    assert plan.objective == "run"
    assert _total(plan, options, edges, gb, cat, target) == pytest.approx(want, abs=1e-6)
    assert _total(plan, options, edges, gb, cat, target) == pytest.approx(
        sum(c.objective(target) for c in ilp)
        + sum(weight(ilp[u], ilp[v], gb[u]) for u, v in edges), abs=1e-6)


@pytest.mark.parametrize("seed", range(20))
def test_dag_ilp_finds_the_cheapest_run(seed: int) -> None:
    rng = random.Random(7000 + seed)
    cat = random_catalog(rng)
    tasks, durations = _timed_tasks(rng, rng.randint(3, 4))
    edges = random_dag(rng, len(tasks))
    target: Target = "cost" if seed % 4 else "time"
    options = _options(tasks, cat, durations, target)
    gb = [float(sum(t.outputs.values())) for t in tasks]
    plan = optimize(tasks, cat, target=target, edges=edges, durations=durations)
    want = _brute(options, edges, gb, cat, target)
    assert _total(plan, options, edges, gb, cat, target) == pytest.approx(want, abs=1e-6)


def _total(plan: object, options: list[list[Choice]], edges: list[tuple[int, int]],
           gb: list[float], cat: Catalog, target: Target) -> float:
    """The objective of the plan's placements, read back from the options."""
    picks = []
    for tp, opts in zip(plan.tasks, options, strict=True):  # type: ignore[attr-defined]
        p = tp.placement
        picks.append(next(c for c in opts if c.placement() == p))
    weight = _weight(cat, target)
    return (sum(c.objective(target) for c in picks)
            + sum(weight(picks[u], picks[v], gb[u]) for u, v in edges))


def test_run_cost_changes_some_random_choices() -> None:
    """The durations matter: on some random instances the run-cost plan differs from the
    hourly one (else the tests above would not tell the two objectives apart)."""
    differ = 0
    for seed in range(30):
        rng = random.Random(5000 + seed)
        cat = random_catalog(rng)
        tasks, durations = _timed_tasks(rng, rng.randint(2, 4))
        hourly = optimize(tasks, cat)
        run = optimize(tasks, cat, durations=durations)
        differ += [t.placement for t in hourly.tasks] != [t.placement for t in run.tasks]
    assert differ > 0


def test_the_pr_comment_says_why_a_dearer_row_was_chosen(tmp_path: Path) -> None:
    args = ("plan", "--catalog", str(SMALL_CATALOG), "--no-diff", "--format", "markdown")
    md = _skyc(tmp_path, args[0], str(_task(tmp_path, MEASURED)), *args[1:]).stdout
    assert "**Placed for the whole run**" in md
    assert "- `train`: cheapest for the whole run: $108.50 for 3.1 h" in md
    plain = _skyc(tmp_path, args[0], str(_task(tmp_path, "")), *args[1:]).stdout
    assert plain.startswith("<!-- skyc-plan:") and "Placed for the whole run" not in plain
