"""Every lowering against its golden files, for every engine its target supports;
compiles are byte-identical."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.compiler.golden import (
    case_id,
    cases,
    emitted,
    engines,
    expected,
    regen,
    write_expected,
)

CASES = cases()
CASE_ENGINES = [(case, engine) for case in CASES for engine in engines(case)]


def test_there_are_cases_for_every_target() -> None:
    assert {c.parent.name for c in CASES} >= {"aws", "azure", "gcp", "kubernetes", "local",
                                              "ssh"}


@pytest.mark.parametrize(("case", "engine"), CASE_ENGINES,
                         ids=[f"{case_id(c)}-{e}" for c, e in CASE_ENGINES])
def test_golden(case: Path, engine: str, tmp_path: Path) -> None:
    files = emitted(case, engine, tmp_path / "ws")
    if regen():
        write_expected(case, files)
    assert files == expected(case, sorted(files)), (
        f"{case_id(case)} ({engine}) changed; SKYC_REGEN=1 to accept")


@pytest.mark.parametrize(("case", "engine"), CASE_ENGINES,
                         ids=[f"{case_id(c)}-{e}" for c, e in CASE_ENGINES])
def test_deterministic_and_workspace_independent(case: Path, engine: str, tmp_path: Path) -> None:
    first = emitted(case, engine, tmp_path / "a")
    second = emitted(case, engine, tmp_path / "elsewhere" / "b")
    assert first == second
    assert all(str(tmp_path) not in text for text in first.values())
