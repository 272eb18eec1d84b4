"""What a plan says a bucket's storage costs: the price per GB-month of its store in its
region (the region skyc creates it in, the one the state recorded, else the store's
default), and a monthly estimate only for a bucket skyc creates whose size the task
gives (``_metadata.skyc.reads``). The plan's JSON and lines through the real CLI; the
notes themselves in process, against a state of their own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from skyc.apply.bucket_notes import bucket_notes
from skyc.schemas.plan import PlanDocument
from skyc.settings.config import SkycConfig
from skyc.task import load_tasks

REPO = Path(__file__).resolve().parents[2]
TASK = """\
name: tr
resources:
  infra: aws/eu-central-1
  cpus: 4
file_mounts:
  /data: s3://team-data/x
  ~/ckpt:
    name: my-ckpts-p1
    persistent: false
  ~/out:
    name: my-outputs-p1
_metadata:
  skyc:
    reads: {"s3://my-ckpts-p1/a": 1.5TB, "s3://my-ckpts-p1/b": 500, "s3://team-data/x": 2TB}
run: echo hi
"""


def _plan(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "t.yaml").write_text(TASK)
    env = {**os.environ, "SKYC_HOME": str(tmp_path / "home"), "PYTHONPATH": str(REPO),
           "AWS_ACCESS_KEY_ID": "AKIDPRICES", "AWS_SECRET_ACCESS_KEY": "not-a-secret"}
    done = subprocess.run([sys.executable, "-m", "skyc", "plan", "t.yaml", "--no-diff",
                           *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return done


def test_the_plan_json_prices_each_bucket_in_its_region(tmp_path: Path) -> None:
    doc = json.loads(_plan(tmp_path, "--format", "json").stdout)
    PlanDocument.model_validate(doc)
    assert doc["format_version"] == "2.4"
    notes = {n["url"]: n for n in doc["notes"]["buckets"]}
    made = notes["s3://my-ckpts-p1"]
    assert (made["action"], made["region"], made["storage_price"],
            made["storage_price_basis"]) == ("create", "eu-central-1", 0.0245, "region")
    # 1.5 TB and 500 GB of it read: 2,000 GB at $0.0245.
    assert (made["storage_gb"], made["monthly_storage_cost"]) == (2000.0, 49.0)
    no_size = notes["s3://my-outputs-p1"]
    assert (no_size["storage_price"], no_size["storage_gb"],
            no_size["monthly_storage_cost"]) == (0.0245, None, None)
    read = notes["s3://team-data/x"]  # where it is is not known: S3's default
    assert (read["region"], read["storage_price"], read["storage_price_basis"]) == (
        None, 0.023, "default")
    assert read["storage_gb"] is None and read["monthly_storage_cost"] is None


def test_the_plan_lines_say_the_price(tmp_path: Path) -> None:
    out = _plan(tmp_path).stdout
    assert ("bucket s3://my-ckpts-p1: created, destroyed with tr; mounted at ~/ckpt (MOUNT) "
            "on cluster tr; storage $0.0245/GB-month (S3 Standard, eu-central-1), about "
            "$49.00/month for the 2,000 GB the task reads from it") in out
    assert ("bucket s3://team-data/x: read as it is; mounted at /data (COPY) on cluster tr; "
            "storage $0.023/GB-month (S3 Standard, the store's default: region not known)"
            ) in out


def test_the_comment_has_a_price_column(tmp_path: Path) -> None:
    out = _plan(tmp_path, "--format", "markdown").stdout
    assert "| mode | cluster | storage price |" in out
    assert ("| `s3://my-ckpts-p1` | create | no | `~/ckpt` | MOUNT | `tr` | "
            "$0.0245/GB-month (eu-central-1); ~$49.00/month for 2,000 GB |") in out
    assert ("| `s3://team-data/x` | read | - | `/data` | COPY | `tr` | "
            "$0.023/GB-month (store default) |") in out


@pytest.fixture()
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SKYC_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    return tmp_path


def _task(where: Path, mounts: str) -> Any:
    path = where / "task.yaml"
    path.write_text(f"name: t\nrun: echo hi\nfile_mounts:\n{mounts}")
    return load_tasks(path).tasks[0]


def test_a_region_not_listed_gets_the_stores_default(home: Path) -> None:
    task = _task(home, "  /ckpt:\n    name: my-ckpts-p2\n")
    [note] = bucket_notes([task], ["aws"], ["c"], SkycConfig(), ["xx-nowhere-1"])
    assert note.region == "xx-nowhere-1" and note.price is not None
    assert (note.price.usd_per_gb_month, note.price.basis) == (0.023, "default")
    assert note.document()["storage_price_basis"] == "default"
    assert note.line().endswith("storage $0.023/GB-month (S3 Standard, the store's "
                                "default: region xx-nowhere-1 not listed)")


def test_gcs_and_r2_buckets_are_priced_by_their_store(home: Path) -> None:
    task = _task(home, "  /ckpt:\n    name: my-ckpts-p3\n  /r2: r2://team-r2/x\n")
    notes = {n.url: n for n in bucket_notes([task], ["gcp"], ["c"], SkycConfig(),
                                            ["europe-west2"])}
    made, r2 = notes["gs://my-ckpts-p3"], notes["r2://team-r2/x"]
    assert made.price is not None and r2.price is not None
    assert (made.region, made.price.usd_per_gb_month, made.price.basis) == (
        "europe-west2", 0.023, "region")
    assert (r2.region, r2.price.usd_per_gb_month, r2.price.basis) == (None, 0.015, "global")


def test_a_bucket_skyc_created_before_is_priced_where_the_state_says(home: Path) -> None:
    from skyc.state.database import StateDB
    from skyc.state.storage import StorageRecord, put_storage

    with StateDB() as db:
        put_storage(db, StorageRecord(name="my-ckpts-p4", store="s3", region="us-west-1",
                                      url="s3://my-ckpts-p4", status="READY"))
    task = _task(home, "  /ckpt:\n    name: my-ckpts-p4\n  /again: s3://my-ckpts-p4/x\n")
    notes = {n.target: n for n in bucket_notes([task], ["aws"], ["c"], SkycConfig(),
                                               ["us-east-1"])}
    for target, action in (("/ckpt", "reuse"), ("/again", "read")):
        note = notes[target]
        assert (note.action, note.region) == (action, "us-west-1")
        assert note.price is not None and note.price.usd_per_gb_month == 0.026
        assert note.size_gb is None and note.monthly_cost is None  # created before
