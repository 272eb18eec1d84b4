"""Every fixture file against its expected normalized output or error text."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from skyc.task import load_tasks
from tests.task.fixtures import (
    INVALID,
    VALID,
    as_json,
    check_expected,
    error_text,
    flags_of,
    load_fixture,
    normalized,
)


def test_there_are_fixtures() -> None:
    assert len(VALID) >= 20 and len(INVALID) >= 15


@pytest.mark.parametrize("path", VALID, ids=[p.stem for p in VALID])
def test_valid_fixture(path: Path) -> None:
    actual = as_json(normalized(load_fixture(path)))
    check_expected(path.with_suffix(".expected.json"), actual)


@pytest.mark.parametrize("path", INVALID, ids=[p.stem for p in INVALID])
def test_invalid_fixture(path: Path) -> None:
    check_expected(path.with_suffix(".expected.txt"), error_text(path))


@pytest.mark.parametrize("path", VALID, ids=[p.stem for p in VALID])
def test_round_trip(path: Path, tmp_path: Path) -> None:
    """load(dump(load(x))) == load(x): the dump is written as YAML and loaded again
    (without the flags: their values are in the dump already)."""
    first = load_fixture(path)
    _, secrets = flags_of(path)
    out = tmp_path / path.name
    out.write_text(yaml.safe_dump_all(first.dump(), sort_keys=False))
    second = load_tasks(out)
    assert second.header == first.header
    if secrets:
        # Secret values are never dumped; compare with the values taken out.
        for task in first.tasks:
            task.secrets = {k: None for k in task.secrets}
    assert second.tasks == first.tasks
    assert [t.dump() for t in second.tasks] == [t.dump() for t in first.tasks]
