"""Conformance: every registered target has the same files and a sound record, and every
golden case runs against every target, including the targets that must refuse it."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from skyc.compiler import (
    TARGET_MODULES,
    build_stack,
    choose_engine,
    register,
    target,
    target_names,
    unregister,
)
from skyc.compiler.contract import Capabilities, Target
from skyc.errors import SkycError, UnsupportedFeature
from skyc.settings.config import SkycConfig
from skyc.stacks import engine_names
from tests.compiler.conformance import part_problems
from tests.compiler.golden import OUTCOMES, case_id, cases, load, regen

CASES = cases()
TARGETS = target_names()


def test_every_target_folder_has_the_same_files() -> None:
    required = {"__init__.py", *(f"{m}.py" for m in TARGET_MODULES)}
    for name in TARGETS:
        folder = resources.files("skyc.compiler").joinpath(name)
        present = {p.name for p in folder.iterdir() if p.name.endswith(".py")}
        assert required <= present, (name, sorted(required - present))


@pytest.mark.parametrize("name", TARGETS)
def test_target_records(name: str) -> None:
    record = target(name)
    assert record.name == record.capabilities.cloud == name
    assert record.engines and set(record.engines) <= set(engine_names())
    assert record.problems() == []


@pytest.mark.parametrize("name", TARGETS)
def test_every_part_of_every_target_has_its_protocol_s_functions(name: str) -> None:
    assert part_problems(target(name)) == []


@pytest.mark.parametrize("name", TARGETS)
def test_every_capability_has_its_part(name: str) -> None:
    record = target(name)
    assert (record.power() is not None) == record.capabilities.stop_start, (
        "a target reads stopped nodes back exactly when it declares stop_start")


class _NoPower(Target):
    """A record that declares stop/start and gives no part to read stopped nodes."""

    def lowering(self) -> Any: return target("local").lowering()
    def errors(self) -> Any: return target("local").errors()
    def outputs(self) -> Any: return target("local").outputs()
    def credentials(self) -> Any: return target("local").credentials()
    def power(self) -> None: return None
    def own_offers(self) -> None: return None
    def ssh_proxy(self) -> None: return None
    def storage(self) -> None: return None


TARGET = _NoPower("nopower", Capabilities(cloud="nopower", stop_start=True), ("terraform",))


def test_a_capability_declared_without_its_part_is_refused_when_loaded() -> None:
    register("nopower", __name__.rpartition(".")[0] + ".nopower_target")
    try:
        with pytest.raises(TypeError, match="declares stop_start but has no power part"):
            target("nopower")
    finally:
        unregister("nopower")


def test_an_unknown_target_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(UnsupportedFeature) as info:
        target("lambda")
    assert "supported: aws, azure, gcp, kubernetes, local, ssh" in info.value.message


def _outcome(case: Path, name: str, tmp_path: Path) -> str:
    cluster, placement, candidate, config = load(case)
    moved = placement.model_copy(update={"cloud": name})
    try:
        stack = build_stack(cluster, moved, candidate, config=config, workspace=tmp_path)
    except SkycError as exc:
        return f"refused: {type(exc).__name__}: {exc.message}"
    assert stack.cloud == name
    return "ok"


def test_every_case_against_every_target(tmp_path: Path) -> None:
    outcomes = {case_id(c): {t: _outcome(c, t, tmp_path) for t in TARGETS} for c in CASES}
    if regen():
        OUTCOMES.write_text(json.dumps(outcomes, indent=2, sort_keys=True) + "\n")
    assert outcomes == json.loads(OUTCOMES.read_text()), "SKYC_REGEN=1 to accept"
    for case in CASES:  # each case compiles on its own target
        assert outcomes[case_id(case)][case.parent.name] == "ok"


def test_engine_choice() -> None:
    plain = SkycConfig()
    assert choose_engine("aws", None, plain) == "terraform"
    assert choose_engine("aws", "pulumi", plain) == "pulumi"
    assert choose_engine("local", None, SkycConfig(engine="pulumi")) == "terraform"
    assert choose_engine("aws", None, SkycConfig(engine="pulumi")) == "pulumi"
    per_target = SkycConfig.model_validate({"engine": {"aws": "pulumi", "default": "terraform"}})
    assert choose_engine("aws", None, per_target) == "pulumi"
    assert choose_engine("aws", "terraform", per_target) == "terraform"
    with pytest.raises(UnsupportedFeature, match="engines for local: terraform"):
        choose_engine("local", "pulumi", plain)
    with pytest.raises(UnsupportedFeature, match="engines for ssh: terraform"):
        choose_engine("ssh", None, SkycConfig.model_validate({"engine": {"ssh": "pulumi"}}))
