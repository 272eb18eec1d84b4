"""Hostile task files: alias bombs, devices, FIFOs, huge numbers and nesting get a
clean verdict (a TaskSpecError naming the file and field), never a hang, a crash or
gigabytes. The time and memory ceilings are asserted by benchmarks/bench_hostile.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from skyc.errors import TaskSpecError
from skyc.task import load_tasks
from skyc.task.bounds import MAX_VALUES
from skyc.task.problems import _short
from skyc.task.reading import MAX_BYTES
from tests.task.fixtures import FIXTURES, check_expected, error_text

HOSTILE = sorted((FIXTURES / "hostile").glob("*.yaml"))


def _refusal(path: Path) -> str:
    with pytest.raises(TaskSpecError) as info:
        load_tasks(path)
    return str(info.value)


def test_there_are_hostile_fixtures() -> None:
    assert len(HOSTILE) >= 12


@pytest.mark.parametrize("path", HOSTILE, ids=[p.stem for p in HOSTILE])
def test_hostile_fixture_verdict(path: Path) -> None:
    check_expected(path.with_suffix(".expected.txt"), error_text(path))


@pytest.mark.parametrize("field", ["config", "service", "volumes./data", "envs",
                                   "resources.labels", "resources.accelerator_args"])
def test_alias_bomb_names_the_field(field: str) -> None:
    stem = {"volumes./data": "volumes", "resources.labels": "labels",
            "resources.accelerator_args": "accelerator-args"}.get(field, field)
    text = _refusal(FIXTURES / "hostile" / f"bomb-{stem}.yaml")
    assert f": {field}." in text and f"more than {MAX_VALUES:,} values" in text, text


def test_aliases_within_the_cap_load_and_stay_shared(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text("run: echo\nconfig:\n  a: &a [1, 2, 3]\n  b: [*a, *a, *a]\n")
    task = load_tasks(path).tasks[0]
    assert task.config == {"a": [1, 2, 3], "b": [[1, 2, 3]] * 3}


def test_values_past_the_cap_without_aliases_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "wide.yaml"
    path.write_text("run: echo\nconfig:\n  x: [" + "1," * MAX_VALUES + "1]\n")
    assert f"holds more than {MAX_VALUES:,} values" in _refusal(path)


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom", "/dev/null"])
def test_a_device_is_not_read(device: str) -> None:
    text = _refusal(Path(device))
    assert text == f"{device}: is a character device, not a regular file; give a task YAML file"


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "task.yaml"
    os.mkfifo(fifo)
    assert "is a FIFO (named pipe), not a regular file" in _refusal(fifo)


def test_a_symlink_to_a_device_is_refused(tmp_path: Path) -> None:
    link = tmp_path / "task.yaml"
    link.symlink_to("/dev/zero")
    assert "is a character device" in _refusal(link)


def test_a_directory_is_refused(tmp_path: Path) -> None:
    assert "is a directory" in _refusal(tmp_path)


def test_a_file_over_the_byte_cap_is_refused_naming_the_cap(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_bytes(b"# " + b"x" * MAX_BYTES + b"\nrun: echo\n")
    assert "is larger than 8 MiB; a task file holds at most 8 MiB" in _refusal(path)


def test_non_utf8_names_the_byte_and_line(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"name: ok\nrun: echo caf\xe9\n")
    assert _refusal(path) == f"{path}:2: is not UTF-8 text (byte 0xe9 at offset 22)"


def test_short_never_renders_a_shared_structure_whole() -> None:
    bomb: list[object] = ["lol"] * 9
    for _ in range(9):
        bomb = [bomb] * 9
    text = _short(bomb)
    assert len(text) == 60 and text.endswith("...") and text.startswith("[[[[")
    assert _short(10 ** 4000).startswith("<an integer of about 4001 digits")
    assert _short({"a": [1, "x"]}) == "{'a': [1, 'x']}"


def test_an_alias_bomb_in_envs_gives_one_problem_not_millions(tmp_path: Path) -> None:
    text = _refusal(FIXTURES / "hostile" / "bomb-envs.yaml")
    assert text.count("\n") == 0, text[:500]


_DEEP = {
    "flow-sequence": ("a: 1\nb:\n  c: " + "[" * 150 + "]" * 150 + "\n", 3),
    "flow-mapping": ("a: 1\nb: " + "{x: " * 150 + "1" + "}" * 150 + "\n", 2),
    "block": ("x:\n" + "".join("  " * i + f"k{i}:\n" for i in range(120))
              + "  " * 120 + "v\n", 102),
}


@pytest.mark.parametrize("case", sorted(_DEEP))
@pytest.mark.parametrize("parser", ["libyaml", "pure-python"])
def test_nesting_verdict_is_skycs_own_bound_on_either_parser(case: str, parser: str) -> None:
    """libyaml (some releases refuse deep flow nesting while scanning ahead, in words of
    their own) and PyYAML's pure-Python parser give the same verdict: skyc's limit and
    the line where it was passed."""
    import yaml

    from skyc.task.bounds import MAX_DEPTH, check_events

    if parser == "libyaml" and not yaml.__with_libyaml__:
        pytest.skip("PyYAML was built without libyaml here")
    loader = yaml.CSafeLoader if parser == "libyaml" else yaml.SafeLoader
    text, line = _DEEP[case]
    with pytest.raises(TaskSpecError) as info:
        check_events(text, "deep.yaml", loader)
    assert str(info.value) == (f"deep.yaml:{line}: invalid YAML: nested deeper than "
                               f"{MAX_DEPTH} levels")
