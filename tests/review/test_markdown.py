"""The pull-request comment: golden outputs, the hidden marker, the 65,000-character cap.

Goldens live in tests/fixtures/review/; regenerate with SKYC_REGEN=1.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from skyc.review.markdown import LIMIT, marker, render
from skyc.review.report import cost_section

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "review"


def golden(name: str, text: str) -> None:
    path = FIXTURES / name
    if os.environ.get("SKYC_REGEN"):
        path.write_text(text)
    assert text == path.read_text(), f"{path} differs (SKYC_REGEN=1 regenerates it)"


def placement(cloud: str, region: str, itype: str, cost: float, nodes: int = 1
              ) -> dict[str, Any]:
    return {"cloud": cloud, "region": region, "zone": None, "instance_type": itype,
            "num_nodes": nodes, "hourly_cost": cost, "use_spot": False}


def rc(address: str, *actions: str) -> dict[str, Any]:
    return {"address": address, "type": address.split(".")[0], "actions": list(actions)}


DOC = {"tasks": [{"name": "train", "placement": placement("aws", "us-east-1", "g5.xlarge",
                                                          2.012, 2)},
                 {"name": "serve", "placement": placement("gcp", "us-central1",
                                                          "n2-standard-4", 0.19)}]}
STACKS = [
    {"cluster": "train", "engine": "terraform", "status": "ok", "note": None,
     "summary": {"create": 1, "no-op": 1, "replace": 1},
     "resource_changes": [rc("aws_instance.node_0", "delete", "create"),
                          rc("aws_instance.node_1", "create"), rc("aws_vpc.main", "no-op")]},
    {"cluster": "serve", "engine": "terraform", "status": "ok", "note": None,
     "summary": {"delete": 1}, "resource_changes": [rc("google_compute_disk.old", "delete")]},
]
POLICY = {"file": "skyc-policy.yaml", "ok": False, "violations": [
    {"rule": "max_hourly_cost_per_cluster", "cluster": "train",
     "message": "$2.0120/hour is over the $2/hour allowed per cluster"}]}


@pytest.fixture()
def empty_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKYC_HOME", str(tmp_path / "skyc-home"))  # no state: before is 0


def comment(files: dict[str, dict[str, str]], limit: int = LIMIT) -> str:
    cost = cost_section(DOC, ["train", "serve"], hours=3)
    return render(DOC, STACKS, cost, POLICY, files, ["skyc apply plan.skyc"], limit=limit)


def test_golden_comment_and_cost(empty_home: None) -> None:
    text = comment({"train": {"main.tf.json": '{\n  "resource": {}\n}\n'}})
    golden("comment.md", text)
    golden("cost.json", json.dumps(cost_section(DOC, ["train", "serve"], hours=3), indent=2,
                                   sort_keys=True) + "\n")
    first, verdict = text.splitlines()[:2]
    assert first == marker(["serve", "train"])          # the same for the same clusters
    assert verdict.startswith("**skyc plan**: 2 to add, 0 to change, 2 to destroy")
    assert "`aws_instance.node_0` is replaced" in text
    assert "`google_compute_disk.old` is destroyed" in text
    assert "\x1b" not in text


def test_the_comment_stays_under_the_cap(empty_home: None) -> None:
    huge = {"train": {"main.tf.json": "\n".join(f'"line {i}": "{"x" * 60}",'
                                                for i in range(5000))}}
    text = comment(huge)
    assert len(text) <= LIMIT
    assert "Truncated to stay under 65,000 characters" in text
    assert text.count("```") % 2 == 0                    # every code fence is closed
    assert text.rstrip().splitlines()[-1].startswith("_Truncated")
    assert "**Next steps**" in text and "- :x: `max_hourly_cost_per_cluster`" in text
    # Small enough: nothing is cut, and it says nothing about it.
    assert "Truncated" not in comment({"train": {"main.tf.json": "{}"}})


def test_the_buckets_table_has_a_storage_price_column(empty_home: None) -> None:
    """The price per GB-month where the plan has one (its region, the store's default
    or one global price), the monthly estimate when the size is known, ``-`` when a
    note has no price (a plan document from before 2.4)."""
    base = {"task": "train", "cluster": "train", "mode": "MOUNT", "persistent": True}
    notes = [
        {**base, "url": "s3://ckpts", "target": "/ckpt", "store": "s3", "action": "create",
         "region": "us-west-1", "storage_price": 0.026, "storage_price_basis": "region",
         "storage_gb": 1500.0, "monthly_storage_cost": 39.0},
        {**base, "url": "gs://data", "target": "/data", "store": "gcs", "action": "read",
         "region": None, "storage_price": 0.02, "storage_price_basis": "default",
         "storage_gb": None, "monthly_storage_cost": None},
        {**base, "url": "r2://media", "target": "/media", "store": "r2", "action": "read",
         "region": None, "storage_price": 0.015, "storage_price_basis": "global",
         "storage_gb": None, "monthly_storage_cost": None},
        {**base, "url": "s3://old", "target": "/old", "store": "s3", "action": "read"},
    ]
    doc = {**DOC, "notes": {"buckets": notes}}
    cost = cost_section(doc, ["train", "serve"], hours=3)
    text = render(doc, STACKS, cost, POLICY, {}, ["skyc apply plan.skyc"])
    rows = [line for line in text.splitlines() if line.startswith(("| `s3:", "| `gs:",
                                                                    "| `r2:"))]
    assert [row.rsplit("|", 2)[1].strip() for row in rows] == [
        "$0.026/GB-month (us-west-1); ~$39.00/month for 1,500 GB",
        "$0.020/GB-month (store default)", "$0.015/GB-month (global)", "-"]
    assert "| bucket | action | persistent | mounted at | mode | cluster | storage price |" in (
        text)
