"""On-demand offers a cloud grants only from a reservation (GCP a3-ultragpu H200, a4
B200) are placed only when the config names one; their spot offers stay; when such an
offer would have been chosen, the task's reason says why it was left out; a task that
pins one on demand, with no reservation, fails naming the reason. Bundled catalog."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from skyc.catalog import Catalog, load_catalog
from skyc.catalog.reservations import reservation_reason
from skyc.errors import InfeasibleError
from skyc.optimizer import Plan, optimize
from tests.optimizer.helpers import make_task

H200 = {"accelerator": {"name": "H200", "count": 8}}
A4 = {"instance_type": "a4-highgpu-8g", "infra": {"cloud": "gcp"}, "use_spot": False}


def _catalog(reservations: dict[str, list[str]] | None) -> Catalog:
    return load_catalog(clouds=["aws", "gcp"], reservations=reservations)


def _plan(cat: Catalog, *cands: dict[str, Any], **kw: Any) -> Plan:
    return optimize([make_task({"name": "train", "candidates": list(cands)}, 0)], cat, **kw)


def test_h200_on_demand_leaves_out_the_reservation_only_offer_and_says_why() -> None:
    held = _plan(_catalog({"gcp": ["my-h200-reservation"]}), H200).tasks[0]
    assert held.placement.instance_type == "a3-ultragpu-8g"  # the cheapest, with a reservation
    assert "reservation" not in held.reason
    plan = _plan(_catalog({}), H200).tasks[0]
    placed = [plan.placement, *plan.alternatives]
    assert not any((p.instance_type or "").startswith("a3-ultragpu-") for p in placed)
    assert plan.placement.hourly_cost > held.placement.hourly_cost
    assert "better offer(s) granted only from a reservation" in plan.reason, plan.reason
    assert reservation_reason("a3-ultragpu-8g") in plan.reason
    assert f"{held.placement.hourly_cost:.4f}/hr total" in plan.reason  # the best left out


def test_spot_placements_need_no_reservation() -> None:
    p = _plan(_catalog({}), {**H200, "use_spot": True, "infra": {"cloud": "gcp"}}).tasks[0]
    assert (p.placement.instance_type, p.placement.use_spot) == ("a3-ultragpu-8g", True)
    assert "reservation" not in p.reason


def test_pinned_a4_on_demand_without_a_reservation_names_the_reason() -> None:
    with pytest.raises(InfeasibleError) as err:
        _plan(_catalog({}), A4)
    assert "task 'train': no feasible placement" in str(err.value)
    assert reservation_reason("a4-highgpu-8g") in str(err.value)
    assert err.value.hint is not None and "use_spot: true" in err.value.hint
    p = _plan(_catalog({"gcp": ["b200-res"]}), A4).tasks[0].placement
    assert (p.cloud, p.instance_type, p.use_spot) == ("gcp", "a4-highgpu-8g", False)


def test_an_ordered_task_falls_back_past_a_reservation_only_first_choice() -> None:
    first = {**A4, "preference": 0}
    second = {"accelerator": {"name": "H100", "count": 8}, "use_spot": True, "preference": 1}
    p = _plan(_catalog({}), first, second).tasks[0].placement
    assert (p.candidate_index, p.use_spot) == (1, True)


def test_reservations_are_read_from_the_config_file(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A catalog not told the reservations reads them from $SKYC_HOME/config.yaml."""
    monkeypatch.setenv("SKYC_HOME", str(tmp_path))
    with pytest.raises(InfeasibleError):
        _plan(_catalog(None), A4)
    (tmp_path / "config.yaml").write_text("gcp:\n  reservations: [b200-res]\n")
    assert _plan(_catalog(None), A4).tasks[0].placement.instance_type == "a4-highgpu-8g"


def test_the_catalog_a_plan_uses_takes_the_reservations_of_the_config_it_is_given() -> None:
    from skyc.apply.infra import catalog_for
    from skyc.settings.config import SkycConfig

    config = SkycConfig.model_validate({"infra": ["gcp"], "gcp": {"reservations": ["r1"]}})
    held = _plan(catalog_for(config), H200).tasks[0]
    assert held.placement.instance_type == "a3-ultragpu-8g"
    with pytest.raises(InfeasibleError, match="granted only from a reservation"):
        _plan(catalog_for(SkycConfig.model_validate({"infra": ["gcp"]})), H200)
