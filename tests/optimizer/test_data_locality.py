"""A task near its data: the egress of reading its buckets from another cloud or
region counts in the optimizer's objective (the small fixture catalog; the egress
rates are the bundled ones)."""

from __future__ import annotations

from pathlib import Path

import pytest

from skyc.catalog import load_catalog
from skyc.optimizer import optimize
from skyc.optimizer.data import DataSource
from skyc.task import load_tasks
from tests.optimizer.helpers import SMALL_CATALOG, make_task

CPU4 = {"candidates": [{"cpus": {"value": 4}}]}


def test_without_data_the_cheapest_offer_wins_with_it_the_one_near_the_data() -> None:
    catalog = load_catalog(SMALL_CATALOG)
    alone = optimize([make_task(CPU4)], catalog)
    assert (alone.tasks[0].placement.cloud, alone.tasks[0].placement.region) == (
        "aws", "us-east-1")  # m6i.xlarge, $0.192/h; GCP's n2-standard-4 is $0.194/h
    data = [[DataSource("gs://team-data/imagenet", "gcp", None, 500.0)]]
    near = optimize([make_task(CPU4)], catalog, data=data)
    placed = near.tasks[0].placement
    assert placed.cloud == "gcp" and placed.instance_type == "n2-standard-4"
    assert "kept near its data (500 GB of gs://team-data/imagenet)" in near.tasks[0].reason
    # Read from AWS, the data leaves GCP: its internet egress, 500 GB at $0.12.
    assert "aws/us-east-1 ($0.192/h) would pay $60.00 of egress" in near.tasks[0].reason
    assert near.egress_cost == 0
    # The bucket's region known (skyc created it there): the task goes to that region.
    west = optimize([make_task(CPU4)], catalog,
                    data=[[DataSource("s3://team-data", "aws", "us-west-2", 500.0)]])
    assert (west.tasks[0].placement.cloud, west.tasks[0].placement.region) == (
        "aws", "us-west-2")


def test_a_little_data_does_not_outweigh_a_cheaper_hour() -> None:
    catalog = load_catalog(SMALL_CATALOG)
    plan = optimize([make_task(CPU4)], catalog,
                    data=[[DataSource("gs://team-data/small", "gcp", None, 0.01)]])
    assert plan.tasks[0].placement.cloud == "aws"
    assert "reads 0.01 GB of gs://team-data/small from elsewhere" in plan.tasks[0].reason
    assert plan.egress_cost > 0


@pytest.mark.parametrize(("reads", "message"), [
    ("{'/local/path': 1TB}", "is not a bucket URL"),
    ("{'s3://b': lots}", "expected a size such as 2TB"),
])
def test_reads_are_checked_when_the_task_is_read(tmp_path: Path, reads: str,
                                                 message: str) -> None:
    from skyc.errors import TaskSpecError

    path = tmp_path / "t.yaml"
    path.write_text(f"run: echo\n_metadata:\n  skyc:\n    reads: {reads}\n")
    with pytest.raises(TaskSpecError) as err:
        load_tasks(path)
    assert message in str(err.value)


def test_sizes_take_units(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text("run: echo\n_metadata:\n  skyc:\n    reads: {'s3://a': 2TB, "
                    "'gs://b/c': 512GiB, 'r2://d': 10}\n")
    meta = load_tasks(path).tasks[0].metadata
    assert meta is not None and meta.skyc is not None
    assert meta.skyc.reads == {"s3://a": 2000.0, "gs://b/c": pytest.approx(549.755813888),
                               "r2://d": 10.0}
