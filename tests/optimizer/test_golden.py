"""Golden cases: tests/fixtures/optimizer/cases/<case>.yaml + the small catalog
(tests/fixtures/catalog/small) -> expected placements or an infeasibility message.

Regenerate expectations with ``SKYC_REGEN_FIXTURES=1 pytest tests/optimizer``
(then review the diff).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from skyc.catalog import load_catalog
from skyc.errors import InfeasibleError
from skyc.optimizer import Blocked, optimize
from tests.optimizer.helpers import FIXTURES, SMALL_CATALOG, make_task

CASES = sorted((FIXTURES / "optimizer" / "cases").glob("*.yaml"))
KEYS = ("cloud", "region", "zone", "instance_type", "hourly_cost", "use_spot", "num_nodes",
        "candidate_index")
_REGEN_KEYS = ("cloud", "region", "zone", "instance_type", "hourly_cost")


def _run(case: dict[str, Any]) -> Any:
    tasks = [make_task(t, i) for i, t in enumerate(case["tasks"])]
    edges = [tuple(e) for e in case["edges"]] if case.get("edges") is not None else None
    return optimize(
        tasks, load_catalog(SMALL_CATALOG),
        blocked=[Blocked.parse(b) for b in case.get("blocked", [])],
        target=case.get("target", "cost"), infra=case.get("infra"), edges=edges,
    )


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_case(path: Path) -> None:
    case = yaml.safe_load(path.read_text())
    regen = os.environ.get("SKYC_REGEN_FIXTURES") == "1"
    if "expect_error" in case:
        with pytest.raises(InfeasibleError) as info:
            _run(case)
        assert case["expect_error"] in str(info.value)
        return
    plan = _run(case)
    got = [tp.placement.model_dump() for tp in plan.tasks]
    if regen:  # the location and price, and every other key the case already checks
        before = case.get("expect") or []
        case["expect"] = [
            {k: g[k] for k in KEYS if k in _REGEN_KEYS or (i < len(before) and k in before[i])}
            for i, g in enumerate(got)
        ]
        path.write_text(yaml.safe_dump(case, sort_keys=False))
    assert len(got) == len(case["expect"])
    for g, want in zip(got, case["expect"], strict=True):
        for key in KEYS:
            if key in want:
                if isinstance(want[key], float):
                    assert g[key] == pytest.approx(want[key]), (key, g)
                else:
                    assert g[key] == want[key], (key, g)
    if "egress_cost" in case:
        assert plan.egress_cost == pytest.approx(case["egress_cost"])
    assert plan.catalog is not None and plan.catalog.source == SMALL_CATALOG.name
    for tp in plan.tasks:  # the chosen placement is never among its own alternatives
        assert tp.placement not in tp.alternatives


def test_ssh_pool_and_local_through_catalog_for(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from skyc.apply.infra import catalog_for
    from skyc.settings.config import SkycConfig, SshPool

    monkeypatch.setenv("HOME", str(tmp_path))  # no cloud credentials
    for var in ("AWS_ACCESS_KEY_ID", "AWS_PROFILE", "GOOGLE_APPLICATION_CREDENTIALS",
                "KUBECONFIG"):
        monkeypatch.delenv(var, raising=False)
    cfg = SkycConfig(ssh_pools={"lab": SshPool(hosts=["10.0.0.5", "10.0.0.6"],
                                               accelerators="A100:8")})
    t = make_task({"candidates": [{"accelerator": {"name": "A100", "count": 4}}]})
    cat = catalog_for(cfg, [t], catalog_dir=SMALL_CATALOG)
    assert cat.clouds == ["local", "ssh"]
    p = optimize([t], cat).tasks[0].placement
    assert (p.cloud, p.region, p.hourly_cost, p.accelerators) == ("ssh", "lab", 0.0, {"A100": 4})
    t3 = make_task({"num_nodes": 3, "candidates": [{"accelerator": {"name": "A100", "count": 4}}]})
    with pytest.raises(InfeasibleError, match="num_nodes 3 exceeds the 2 host"):
        optimize([t3], cat)
    pinned = make_task({"candidates": [{"accelerator": {"name": "A100", "count": 8},
                                        "infra": {"cloud": "gcp"}}]})
    cat = catalog_for(cfg, [pinned], catalog_dir=SMALL_CATALOG)  # named: considered offline
    assert "gcp" in cat.clouds
    assert optimize([pinned], cat).tasks[0].placement.instance_type == "a2-highgpu-8g"
    cpu = make_task({"candidates": [{"cpus": {"value": 1, "at_least": True}}]})
    assert optimize([cpu], catalog_for(cfg, [cpu])).tasks[0].placement.cloud == "local"
