"""Every Azure VM size the optimizer can pick from the bundled catalog compiles, and its
Pulumi program runs under the mock runtime, or (a size whose accelerator no image's
driver runs) is refused naming what it needs.

Every distinct size, on demand and (where priced) spot, is built into a stack in a
region that offers it at that price. Programs that differ only in the size's name
are the same program for the SDK (the size is a plain string to it), so one of each
such group, per size family, runs under Pulumi's mock runtime with the real
azure-native classes: every family, image kind, disk and network setting is run,
not sampled by chance.
"""

from __future__ import annotations

from pathlib import Path

from skyc.catalog import OfferQuery, load_catalog
from skyc.compiler import build_stack
from skyc.compiler.azure.sizes import size_facts
from skyc.errors import UnsupportedFeature
from skyc.model.plan import Placement
from skyc.settings.config import SkycConfig
from skyc.stacks.pulumi_preview import run_program
from skyc.stacks.pulumi_python import program
from skyc.task.candidate import ResourceCandidate

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIsizes skyc-test"


def _placements() -> list[Placement]:
    """One placement per (size, spot) the catalog prices: the first region by name."""
    offers = load_catalog().offers(OfferQuery(cloud="azure", any_accelerator=True,
                                              kind="elastic"))
    chosen: dict[tuple[str, bool], Placement] = {}
    for offer in sorted(offers, key=lambda o: (o.instance_type or "", o.region)):
        for spot in (False, True):
            price = offer.hourly(spot)
            key = (offer.instance_type or "", spot)
            if price is None or key in chosen:
                continue
            accelerators = ({offer.accelerator: offer.accelerator_count}
                            if offer.accelerator else None)
            chosen[key] = Placement(
                cloud="azure", region=offer.region, zone=offer.zone,
                instance_type=offer.instance_type, accelerators=accelerators,
                use_spot=spot, hourly_cost=price)
    return [chosen[k] for k in sorted(chosen)]


def test_every_pickable_size_compiles_and_runs_under_the_mock_runtime(tmp_path: Path) -> None:
    placements = _placements()
    sizes = {p.instance_type for p in placements}
    assert len(sizes) > 1000 and any(p.use_spot for p in placements)
    groups: dict[tuple[str, str], tuple[Placement, str]] = {}
    refused: set[str] = set()
    for placement in placements:
        size = placement.instance_type or ""
        candidate = ResourceCandidate(index=0, use_spot=placement.use_spot)
        try:
            stack = build_stack("sizes", placement, candidate, config=SkycConfig(),
                                workspace=tmp_path)
        except UnsupportedFeature as exc:  # only a size no image has a driver for
            assert " needs the " in exc.message and "image_id" in (exc.hint or ""), exc
            refused.add(size_facts(size).family)
            continue
        text = program(stack)
        assert f'vm_size="{size}"' in text
        shape = text.replace(size, "<size>").replace(placement.region or "", "<region>")
        groups.setdefault((size_facts(size).family, shape), (placement, text))
    families = {size_facts(s or "").family for s in sizes}
    covered = {size_facts(p.instance_type or "").family for p, _ in groups.values()}
    assert covered | refused == families and "unknown" not in families
    assert refused < families and not refused & covered
    for placement, text in groups.values():
        recorded = run_program(text, stack="sizes", config={"ssh_public_key": KEY})
        (vm,) = [r.inputs for r in recorded if r.type == "azure-native:compute:VirtualMachine"]
        assert vm["hardwareProfile"]["vmSize"] == placement.instance_type
        assert (vm.get("priority") == "Spot") == placement.use_spot
    assert 10 < len(groups) < 200, len(groups)
