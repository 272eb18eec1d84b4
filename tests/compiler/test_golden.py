"""Every lowering against its golden main.tf.json; compiles are byte-identical."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from skyc.stacks import emit
from tests.compiler.golden import case_id, cases, compile_case, expected, write_expected

CASES = cases()


def test_there_are_cases_for_every_target() -> None:
    assert {c.parent.name for c in CASES} == {"aws", "local", "ssh"}


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_golden(case: Path, tmp_path: Path) -> None:
    text = emit(compile_case(case, tmp_path / "ws"))
    if os.environ.get("SKYC_REGEN") == "1":
        write_expected(case, text)
    assert text == expected(case), f"{case_id(case)} changed; SKYC_REGEN=1 to accept"


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_deterministic_and_workspace_independent(case: Path, tmp_path: Path) -> None:
    first = emit(compile_case(case, tmp_path / "a"))
    second = emit(compile_case(case, tmp_path / "elsewhere" / "b"))
    assert first.encode() == second.encode()
    assert str(tmp_path) not in first
