"""Every GCP placement the optimizer can pick compiles, and its Pulumi program runs.

From the bundled catalog: every distinct (machine type or TPU slice, accelerator and
count) GCP offers, on demand and spot where priced. For each, the optimizer is asked
for it (pinned to that type and accelerator) and must pick it; the stack is built and
emitted for every one. The Pulumi program (the real pulumi_gcp classes under Pulumi's
mock runtime) runs for a deterministic sample that covers every family: per machine
family (``n2-standard``, ``a3-highgpu``, ``tpu-v5p``, ...), accelerator, spot or not
and single- or multi-host, the first and the last of the group in name order. The
project holds a reservation, so the on-demand A3 Ultra and A4 VMs (granted only from
one) are placed and consume it.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import pytest

from skyc.catalog import OfferQuery, load_catalog
from skyc.catalog.hosts import TPU_VM, is_tpu
from skyc.catalog.reservations import needs_reservation
from skyc.compiler import build_stack
from skyc.compiler.gcp import machines
from skyc.model.plan import Placement
from skyc.optimizer import optimize
from skyc.settings.config import SkycConfig
from skyc.stacks import emit
from tests.optimizer.helpers import make_task
from tests.support.stack_inputs import with_network

Kind = tuple[str, str | None, float, bool]   # machine type, accelerator, count, spot


def _kinds() -> dict[Kind, tuple[str, str | None]]:
    """Every kind, with the first (region, zone) that offers it."""
    offers = CATALOG.offers(OfferQuery(cloud="gcp", any_accelerator=True))
    found: dict[Kind, tuple[str, str | None]] = {}
    for o in offers:
        for spot in (False, True):
            if o.hourly(spot) is not None:
                kind = (o.instance_type or "", o.accelerator, o.accelerator_count, spot)
                found[kind] = min(found.get(kind, (o.region, o.zone)), (o.region, o.zone),
                                  key=lambda p: (p[0], p[1] or ""))
    return dict(sorted(found.items(), key=lambda i: (i[0][0], i[0][1] or "", *i[0][2:])))


def _group(kind: Kind) -> tuple[str, str | None, bool, bool]:
    machine, accelerator, _, spot = kind
    if accelerator and is_tpu(accelerator):
        family = re.sub(r"-\d+$", "", accelerator)
        return family, None, spot, machines.tpu_slice(accelerator).hosts > 1
    family = "-".join(machine.split("-")[:2])
    return family, accelerator, spot, False


def _placement(kind: Kind) -> Placement:
    """What the optimizer picks for the kind, pinned to a zone that has it (the zone
    keeps the search, and so the test, short)."""
    machine, accelerator, count, spot = kind
    region, zone = KINDS[kind]
    candidate: dict[str, object] = {"infra": {"cloud": "gcp", "region": region, "zone": zone},
                                    "use_spot": spot, "instance_type": machine}
    if accelerator:
        candidate["accelerator"] = {"name": accelerator, "count": count}
    task = make_task({"candidates": [candidate]})
    return optimize([task], CATALOG).tasks[0].placement


RESERVATIONS = ["res-1"]
# The bundled catalog for a project holding a reservation: on-demand A3 Ultra and A4
# are granted only from one, and placed only where the config names one.
CATALOG = load_catalog(reservations={"gcp": RESERVATIONS})
KINDS = _kinds()
ORDER = list(KINDS)
CATALOG_CANDIDATE = make_task({"candidates": [{}]}).cands[0]   # the task's defaults
CONFIG = SkycConfig.model_validate({"gcp": {"reservations": RESERVATIONS}})


def _sample() -> list[Kind]:
    groups: dict[tuple[str, str | None, bool, bool], list[Kind]] = defaultdict(list)
    for kind in KINDS:
        groups[_group(kind)].append(kind)
    return sorted({k for members in groups.values() for k in (members[0], members[-1])},
                  key=ORDER.index)


def test_the_catalog_has_every_kind_of_gcp_placement() -> None:
    families = {_group(k)[0] for k in KINDS}
    assert {"a2-highgpu", "a3-highgpu", "a3-ultragpu", "a4-highgpu", "g2-standard",
            "n1-standard", "n2-standard", "c4-standard", "tpu-v4", "tpu-v5litepod",
            "tpu-v5p", "tpu-v6e"} <= families
    assert any(k[3] for k in KINDS) and any(not k[3] for k in KINDS)
    assert any(k[0] == TPU_VM and machines.tpu_slice(k[1] or "").hosts > 1 for k in KINDS)


def test_every_placement_the_optimizer_can_pick_compiles(tmp_path: Path) -> None:
    problems = []
    for kind in KINDS:
        placement = _placement(kind)
        got = (placement.instance_type, *(next(iter((placement.accelerators or {}).items()),
                                               (None, 0.0))), placement.use_spot)
        assert got == kind, f"the optimizer picked {got} for {kind}"
        try:
            stack = build_stack("c", placement, CATALOG_CANDIDATE, config=CONFIG,
                                workspace=tmp_path)
            emit(stack, "pulumi")
        except Exception as exc:  # collected: one report names every failing kind
            problems.append(f"{kind}: {type(exc).__name__}: {exc}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("kind", _sample(), ids=lambda k: "-".join(
    str(p) for p in (k[0], k[1], int(k[2]), "spot" if k[3] else "on-demand")))
def test_program_runs_under_the_mock_runtime(kind: Kind, tmp_path: Path) -> None:
    pytest.importorskip("pulumi_gcp", reason="the Pulumi SDKs (skyc[pulumi]) are not installed")
    from skyc.stacks.pulumi_preview import run_program

    placement = _placement(kind)
    stack = build_stack("c", placement, CATALOG_CANDIDATE, config=CONFIG, workspace=tmp_path)
    recorded = run_program(emit(stack, "pulumi")["__main__.py"], stack="c",
                           config=with_network(stack, {"ssh_keys": "skyc:ssh-ed25519 AAAA",
                                                       "project": "p-123456"}))
    machine_type = "gcp:tpu/v2Vm:V2Vm" if kind[0] == TPU_VM else "gcp:compute/instance:Instance"
    nodes = [r for r in recorded if r.type == machine_type]
    assert len(nodes) == 1
    inputs = nodes[0].inputs
    if kind[0] == TPU_VM:
        assert inputs["acceleratorType"] == (kind[1] or "").removeprefix("tpu-")
        assert inputs["runtimeVersion"]
        assert (inputs.get("schedulingConfig") == {"spot": True}) == kind[3]
    else:
        assert inputs["machineType"] == kind[0]
        assert (inputs["scheduling"]["provisioningModel"] == "SPOT") == kind[3]
        reserved = needs_reservation("gcp", kind[0], kind[3])
        assert (inputs.get("reservationAffinity") == {
            "type": "SPECIFIC_RESERVATION", "specificReservation": {
                "key": "compute.googleapis.com/reservation-name", "values": RESERVATIONS}}
                ) == reserved
        attached = inputs.get("guestAccelerators")
        assert bool(attached) == (kind[0].startswith("n1-") and kind[1] is not None)
