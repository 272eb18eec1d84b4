"""The chain DP and the DAG integer program return the true optimum: compared with
brute force over every combination of feasible choices on random small instances."""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest

from skyc.catalog.catalog import Catalog
from skyc.catalog.table import CloudTable
from skyc.model.plan import CatalogSource
from skyc.optimizer import optimize, task_choices
from skyc.optimizer.rank import top_preference
from skyc.optimizer.timemodel import estimated_hours
from skyc.task.candidate import AcceleratorRequest, ResourceCandidate
from tests.optimizer.helpers import FakeTask

CLOUDS = ("aws", "gcp", "azure")
ACCS = ("T4", "A100")


def random_catalog(rng: random.Random) -> Catalog:
    loaders = {}
    for cloud in CLOUDS:
        types: list[list[Any]] = []
        for acc in (None, *ACCS):
            rows = []
            for r in range(rng.randint(1, 2)):
                for z in range(rng.randint(1, 2)):
                    if rng.random() < 0.8:
                        price = round(rng.uniform(0.5, 5.0), 3)
                        rows.append([f"{cloud}-r{r}", f"{cloud}-r{r}-z{z}", price,
                                     round(price * rng.uniform(0.2, 0.9), 3)])
            if rows:
                name = f"{cloud}.{(acc or 'cpu').lower()}"
                types.append([name, acc, 1 if acc else 0, 16 if acc else None, 8, 32, None, rows])
        data = {"cloud": cloud, "types": types, "accelerators": []}
        loaders[cloud] = (lambda d=data: CloudTable.from_data(d))
    return Catalog(loaders, CatalogSource(source="random", date="2026-01-01"))


def random_tasks(rng: random.Random, n: int) -> list[FakeTask]:
    tasks = []
    for i in range(n):
        cands = []
        for k in range(rng.randint(1, 2)):
            acc = rng.choice((None, *ACCS))
            cands.append(ResourceCandidate(
                index=k, preference=rng.choice((0, 0, 1)),
                accelerator=AcceleratorRequest(name=acc, count=1) if acc else None,
                use_spot=rng.random() < 0.3,
            ))
        gb = rng.choice((0, 5, 50, 500))
        tasks.append(FakeTask(cands, name=f"t{i}", outputs={"gs://x": gb} if gb else {}))
    return tasks


def random_dag(rng: random.Random, n: int) -> list[tuple[int, int]]:
    edges = [(u, v) for u in range(n) for v in range(u + 1, n) if rng.random() < 0.5]
    return edges


def brute_force(tasks: list[FakeTask], cat: Catalog, edges: list[tuple[int, int]],
                target: str) -> float:
    per_task = [top_preference(task_choices(t.candidates(), t.num_nodes, cat)) for t in tasks]
    gb = [float(sum(t.outputs.values())) for t in tasks]
    best = float("inf")
    for combo in itertools.product(*per_task):
        total = sum(c.objective(target) for c in combo)  # type: ignore[arg-type]
        for u, v in edges:
            if target == "cost":
                total += cat.egress_cost(combo[u].offer, combo[v].offer, gb[u])
            else:
                total += cat.egress_seconds(combo[u].offer, combo[v].offer, gb[u]) / 3600
        best = min(best, total)
    return best


def plan_total(plan: Any, tasks: list[FakeTask], cat: Catalog, edges: list[tuple[int, int]],
               target: str) -> float:
    picks = []
    for tp in plan.tasks:
        p = tp.placement
        offer = next(o for o in cat.offers(_query_for(p)) if o.zone == p.zone)
        picks.append((p, offer))
    gb = [float(sum(t.outputs.values())) for t in tasks]
    if target == "cost":
        total = sum(p.hourly_cost for p, _ in picks)
        return total + sum(cat.egress_cost(picks[u][1], picks[v][1], gb[u]) for u, v in edges)
    total = sum(estimated_hours(o, p.num_nodes) for p, o in picks)
    return total + sum(cat.egress_seconds(picks[u][1], picks[v][1], gb[u]) / 3600
                       for u, v in edges)


def _query_for(p: Any) -> Any:
    from skyc.catalog import OfferQuery

    return OfferQuery(cloud=p.cloud, region=p.region, zone=p.zone,
                      instance_type=p.instance_type, any_accelerator=True)


@pytest.mark.parametrize("seed", range(60))
def test_chain_is_optimal(seed: int) -> None:
    rng = random.Random(seed)
    cat = random_catalog(rng)
    tasks = random_tasks(rng, rng.randint(2, 4))
    target = "cost" if seed % 3 else "time"
    edges = [(i, i + 1) for i in range(len(tasks) - 1)]
    plan = optimize(tasks, cat, target=target)  # type: ignore[arg-type]
    want = brute_force(tasks, cat, edges, target)
    assert plan_total(plan, tasks, cat, edges, target) == pytest.approx(want, abs=1e-6)


@pytest.mark.parametrize("seed", range(40))
def test_dag_is_optimal(seed: int) -> None:
    rng = random.Random(1000 + seed)
    cat = random_catalog(rng)
    tasks = random_tasks(rng, rng.randint(3, 4))
    edges = random_dag(rng, len(tasks))
    target = "cost" if seed % 4 else "time"
    plan = optimize(tasks, cat, target=target, edges=edges)  # type: ignore[arg-type]
    want = brute_force(tasks, cat, edges, target)
    assert plan_total(plan, tasks, cat, edges, target) == pytest.approx(want, abs=1e-6)
