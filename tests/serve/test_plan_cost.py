"""`skyc plan` of a service task: its replicas' cost range, priced from the catalog, with
SkyPilot's spot fallbacks (real bundled catalog, real task loader and optimizer)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from skyc.apply.service_cost import service_cost
from skyc.catalog import load_catalog
from skyc.catalog.offer import OfferQuery
from skyc.model.plan import Placement
from skyc.task import load_tasks

SPOT_SERVICE = """\
name: llm
resources:
  accelerators: L4:1
  use_spot: true
service:
  readiness_probe: /health
  replica_policy:
    min_replicas: 1
    max_replicas: 3
    target_qps_per_replica: 5
    base_ondemand_fallback_replicas: 1
    dynamic_ondemand_fallback: true
run: python -m http.server 8080
"""


def _task(tmp_path: Path, text: str) -> object:
    path = tmp_path / "svc.yaml"
    path.write_text(text)
    return load_tasks(path).tasks[0]


def _offer() -> tuple[Placement, float]:
    """A spot L4 offer of the bundled catalog, as a placement, and its on-demand price."""
    catalog = load_catalog()
    offer = next(o for o in catalog.offers(OfferQuery(
        cloud="aws", accelerator="L4", accelerator_count=1))
        if o.spot_price is not None and o.price is not None and o.instance_type == "g6.xlarge")
    placement = Placement(cloud="aws", region=offer.region, zone=offer.zone,
                          instance_type=offer.instance_type, accelerators={"L4": 1},
                          use_spot=True, hourly_cost=offer.spot_price)
    assert offer.price is not None
    return placement, offer.price


def test_spot_replicas_with_an_on_demand_base_and_dynamic_fallback(tmp_path: Path) -> None:
    placement, ondemand = _offer()
    cost = service_cost(_task(tmp_path, SPOT_SERVICE), placement, load_catalog())  # type: ignore[arg-type]
    assert cost is not None
    assert (cost.min_replicas, cost.max_replicas, cost.ondemand_base) == (1, 3, 1)
    assert cost.replica_ondemand == pytest.approx(ondemand)
    # The fewest: the one replica kept on demand. The most: 3, all on demand while spot
    # capacity is short (dynamic_ondemand_fallback).
    assert cost.low == pytest.approx(ondemand)
    assert cost.high == pytest.approx(3 * ondemand)


def test_spot_replicas_without_fallback_are_priced_at_spot(tmp_path: Path) -> None:
    placement, _ = _offer()
    text = SPOT_SERVICE.replace("    base_ondemand_fallback_replicas: 1\n", "").replace(
        "    dynamic_ondemand_fallback: true\n", "")
    cost = service_cost(_task(tmp_path, text), placement, load_catalog())  # type: ignore[arg-type]
    assert cost is not None and cost.ondemand_base == 0 and not cost.dynamic_fallback
    assert (cost.low, cost.high) == (pytest.approx(placement.hourly_cost),
                                     pytest.approx(3 * placement.hourly_cost))


def test_fixed_replicas_and_a_task_that_is_no_service(tmp_path: Path) -> None:
    placement, ondemand = _offer()
    fixed = placement.model_copy(update={"use_spot": False, "hourly_cost": ondemand})
    text = ("name: web\nservice:\n  readiness_probe: /\n  replicas: 2\n"
            "run: python -m http.server 8080\n")
    cost = service_cost(_task(tmp_path, text), fixed, load_catalog())  # type: ignore[arg-type]
    assert cost is not None and cost.min_replicas == cost.max_replicas == 2
    assert cost.low == cost.high == pytest.approx(2 * ondemand)
    plain = _task(tmp_path, "name: job\nrun: echo hi\n")
    assert service_cost(plain, fixed, load_catalog()) is None  # type: ignore[arg-type]


def test_plan_shows_the_range_in_its_notes_and_json(tmp_path: Path) -> None:
    (tmp_path / "svc.yaml").write_text(SPOT_SERVICE)
    env = {**os.environ, "SKYC_HOME": str(tmp_path / "home")}
    run = subprocess.run([sys.executable, "-m", "skyc", "plan", "svc.yaml", "--no-diff",
                          "--infra", "aws", "--format", "json"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    assert doc["format_version"] == "2.4"
    (service,) = doc["notes"]["services"]
    assert service["task"] == "llm" and service["max_replicas"] == 3
    assert service["hourly_high"] == pytest.approx(3 * service["replica_ondemand_hourly"])
    assert service["served"] is False    # serve up runs replicas on local only
    assert "service llm: 1-3 replica(s)" in run.stderr
    assert "`skyc serve up` runs replicas on local only in this version" in run.stderr
    text = subprocess.run([sys.executable, "-m", "skyc", "plan", "svc.yaml", "--no-diff",
                           "--infra", "aws"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)
    assert "controller and load balancer on this machine" in text.stdout + text.stderr


def test_a_local_service_is_served_where_it_is_planned(tmp_path: Path) -> None:
    text = ("name: web\nresources:\n  infra: local\nservice:\n  readiness_probe: /\n"
            "  replicas: 2\nrun: python -m http.server $SKYC_SERVE_PORT\n")
    (tmp_path / "svc.yaml").write_text(text)
    env = {**os.environ, "SKYC_HOME": str(tmp_path / "home")}
    run = subprocess.run([sys.executable, "-m", "skyc", "plan", "svc.yaml", "--no-diff",
                          "--format", "json"], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    (service,) = json.loads(run.stdout)["notes"]["services"]
    assert service["served"] is True and service["hourly_low"] == 0.0
    assert service["min_replicas"] == service["max_replicas"] == 2
    assert "only in this version" not in run.stderr
