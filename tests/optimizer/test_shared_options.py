"""Tasks that ask for the same resources share their options within one ``optimize``
call (a long pipeline repeats a few shapes): the catalog is asked once per distinct
request, and the plan is the one each task would get on its own. Bundled catalog."""

from __future__ import annotations

from typing import Any

import pytest

from skyc.catalog import Catalog, Offer, OfferQuery, load_catalog
from skyc.optimizer import optimize
from skyc.optimizer.choice import Target
from skyc.optimizer.feasible import feasibility_key
from skyc.optimizer.options import TaskOptionsMemo
from skyc.task.candidate import ResourceCandidate
from tests.optimizer.helpers import FakeTask, make_task

SPECS: list[dict[str, Any]] = [
    {"candidates": [{"cpus": {"value": 4, "at_least": True}}]},
    {"candidates": [{"cpus": {"value": 8, "at_least": True},
                     "memory": {"value": 32, "at_least": True}}]},
    {"candidates": [{"cpus": {"value": 2, "at_least": True}, "use_spot": True}]},
    {"candidates": [{"accelerator": {"name": "A100", "count": 1}}]},
    {"candidates": [{"accelerator": {"name": "L4", "count": 1}, "use_spot": True}]},
    {"candidates": [{"accelerator": {"name": "H100", "count": 8}}], "num_nodes": 2},
    {"candidates": [{"accelerator": {"name": "A100", "count": 8}, "preference": 0},
                    {"accelerator": {"name": "L4", "count": 1}, "preference": 1}]},
]


def _counting() -> tuple[Catalog, list[OfferQuery]]:
    """The real catalog, and a list of the queries it answers."""
    cat = load_catalog(clouds=["aws", "gcp", "azure"], reservations={})
    asked: list[OfferQuery] = []
    answer = cat.offers

    def offers(query: OfferQuery) -> list[Offer]:
        asked.append(query)
        return answer(query)

    cat.offers = offers  # type: ignore[method-assign]
    return cat, asked


def _pipeline(repeats: int) -> list[FakeTask]:
    return [make_task({**SPECS[i % len(SPECS)], "name": f"step{i}"}, i)
            for i in range(repeats * len(SPECS))]


def test_equal_requests_ask_the_catalog_once() -> None:
    (once, asked_once), (many, asked_many) = _counting(), _counting()
    optimize(_pipeline(1), once)
    optimize(_pipeline(6), many)
    assert asked_once
    assert asked_many == asked_once


@pytest.mark.parametrize("target", ["cost", "time"])
def test_a_mixed_pipeline_plans_as_each_task_alone(target: Target) -> None:
    cat = load_catalog(clouds=["aws", "gcp", "azure"], reservations={})
    tasks = _pipeline(3)
    plan = optimize(tasks, cat, target=target)
    for task, got in zip(tasks, plan.tasks, strict=True):
        alone = optimize([task], cat, target=target).tasks[0]
        assert got == alone, task.name


def test_memoised_options_equal_options_worked_out_afresh() -> None:
    cat = load_catalog(clouds=["aws", "gcp", "azure"], reservations={})
    memo = TaskOptionsMemo(cat, blocked=(), infra=(None, None, None), target="cost",
                           allowed=None)
    for task in _pipeline(2):
        shared = memo.of(task.name or "", task)
        fresh = memo.work_out(task.name or "", task.candidates(), task.num_nodes)
        assert shared == fresh


def test_tasks_share_only_what_feasibility_reads() -> None:
    base = ResourceCandidate.model_validate({"index": 0, "cpus": {"value": 4}})
    same = [base.model_copy(update=u) for u in (
        {"labels": {"team": "a"}}, {"disk_size": 512}, {"ports": ("8080",)},
        {"image_id": "img"}, {"disk_tier": "high"})]
    assert {feasibility_key(c) for c in same} == {feasibility_key(base)}
    other = [ResourceCandidate.model_validate({"index": 0, **u}) for u in (
        {"cpus": {"value": 4, "at_least": True}}, {"cpus": {"value": 8}},
        {"cpus": {"value": 4}, "use_spot": True}, {"cpus": {"value": 4}, "preference": 1},
        {"cpus": {"value": 4}, "memory": {"value": 16}},
        {"cpus": {"value": 4}, "infra": {"cloud": "aws"}},
        {"cpus": {"value": 4}, "infra": {"cloud": "aws", "region": "us-east-1"}},
        {"cpus": {"value": 4}, "instance_type": "m6i.xlarge"},
        {"cpus": {"value": 4}, "accelerator": {"name": "L4"}},
        {"cpus": {"value": 4}, "accelerator": {"name": "L4", "count": 2}},
        {"cpus": {"value": 4}, "accelerator": {"name": None, "min_memory_gib": 80}})]
    keys = [feasibility_key(c) for c in [base, *other]]
    assert len(set(keys)) == len(keys)
    assert feasibility_key(base.model_copy(update={"index": 1})) != feasibility_key(base)


def test_tasks_that_differ_get_their_own_placements() -> None:
    cat = load_catalog(clouds=["aws", "gcp", "azure"], reservations={})
    cpu = {"cpus": {"value": 4, "at_least": True}}
    tasks = [make_task(s, i) for i, s in enumerate([
        {"candidates": [cpu]}, {"candidates": [{**cpu, "use_spot": True}]},
        {"candidates": [cpu], "num_nodes": 3}, {"candidates": [{**cpu, "disk_size": 900}]}])]
    plan = optimize(tasks, cat)
    first, spot, three, disk = (t.placement for t in plan.tasks)
    assert (first.use_spot, spot.use_spot) == (False, True)
    assert three.num_nodes == 3 and three.hourly_cost == pytest.approx(3 * first.hourly_cost)
    assert disk == first  # the disk is the compiler's business: the same offer
