"""A stack's resource types are keyed by schema family, not by engine: an engine reads
the types of the family it declares, so a second engine of Terraform's family (as
OpenTofu is) writes the very stack the terraform engine writes."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from skyc.errors import EngineError
from skyc.model.stack import Provider, Resource, Stack
from skyc.stacks import (
    emit,
    engine_names,
    pulumi_engine,
    pulumi_python,
    registry,
    schema_family,
    stack_engine,
    terraform,
    terraform_json,
    write_stack,
)

COMPATIBLE = "terraform-compatible"


def _stack() -> Stack:
    stack = Stack(name="fam", cloud="local")
    stack.providers = {"null": Provider(types={"terraform": "null", "pulumi": "null.Provider"},
                                        source="hashicorp/null", version="3.2.2")}
    stack.add(Resource(key="node_0", types={"terraform": "terraform_data",
                                            "pulumi": "command.local.Command"},
                       properties={"input": "head"}, formerly={"terraform": "terraform_data.n"}))
    return stack


@pytest.fixture
def compatible(monkeypatch: pytest.MonkeyPatch) -> str:
    """An engine registered under a name of its own, of Terraform's schema family, whose
    files are terraform's emitter's (as an OpenTofu engine's would be)."""
    module = types.ModuleType("tests_stacks_terraform_compatible")
    module.NAME = COMPATIBLE  # type: ignore[attr-defined]
    module.SCHEMA_FAMILY = "terraform"  # type: ignore[attr-defined]
    module.STACK_FILE = terraform_json.STACK_FILE  # type: ignore[attr-defined]
    module.files = terraform_json.files  # type: ignore[attr-defined]
    module.write = terraform.write  # type: ignore[attr-defined]
    module.open_engine = terraform.open_engine  # type: ignore[attr-defined]
    module.unavailable = terraform.unavailable  # type: ignore[attr-defined]
    module.previews_offline = terraform.previews_offline  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(registry.ENGINES, COMPATIBLE, module.__name__)
    return COMPATIBLE


def test_each_engine_declares_its_family() -> None:
    assert terraform.SCHEMA_FAMILY == terraform_json.SCHEMA_FAMILY == "terraform"
    assert pulumi_engine.SCHEMA_FAMILY == pulumi_python.SCHEMA_FAMILY == "pulumi"
    assert {name: schema_family(name) for name in engine_names()} == {
        "terraform": "terraform", "pulumi": "pulumi"}


def test_the_family_not_the_name_selects_the_types(compatible: str, tmp_path: Path) -> None:
    stack = _stack()
    assert COMPATIBLE not in stack.resources[0].types  # no types keyed by its name
    assert schema_family(compatible) == "terraform"
    assert stack.families() == ["pulumi", "terraform"]
    assert emit(stack, compatible) == emit(stack, "terraform")
    ours, theirs = tmp_path / "compatible", tmp_path / "terraform"
    write_stack(stack, ours, {"key": "v"}, engine=compatible)
    write_stack(stack, theirs, {"key": "v"}, engine="terraform")
    for name in (terraform_json.STACK_FILE, terraform_json.VARS_FILE):
        assert (ours / name).read_bytes() == (theirs / name).read_bytes()
    assert stack_engine(ours) == compatible and stack_engine(theirs) == "terraform"


def test_a_stack_without_the_familys_types_names_the_family(compatible: str) -> None:
    stack = Stack(name="fam", cloud="local")
    stack.add(Resource(key="bucket", types={"pulumi": "gcp.storage.Bucket"}))
    assert stack.families() == ["pulumi"]
    with pytest.raises(EngineError, match="has no terraform type"):
        emit(stack, compatible)
