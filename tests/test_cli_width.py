"""Narrow terminals: ``skyc show-gpus`` (no argument, ``A100:8``, ``-a``) and ``skyc plan``
on a pipeline, run in a real pseudo-terminal 80 and 100 columns wide. Every line fits;
no cell is cut short (no ``…``); every price, instance type, infra and cost cell of the
same output at full width is still there, whole or folded onto the next line at the
same column, never dropped (only lesser columns are).

The pseudo-terminal is this machine's own (``pty``), sized with ``TIOCSWINSZ`` and
``COLUMNS``, so skyc sees a terminal exactly as in an interactive shell."""

from __future__ import annotations

import fcntl
import itertools
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PIPELINE = ROOT / "examples" / "pipeline.yaml"
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
# Columns that are never left out nor cut short.
_KEPT = {"infra", "instance", "$/hr/node", "$/hr total", "cost", "accelerator",
         "from $/hr per accelerator"}


def _env(home: Path, columns: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AWS_", "GOOGLE_", "AZURE_", "KUBECONFIG", "NO_COLOR"))}
    env.update(HOME=str(home), SKYC_HOME=str(home / ".skyc"), PYTHONPATH=str(ROOT),
               COLUMNS=str(columns), LINES="50", TERM="xterm-256color")
    return env


def _in_terminal(home: Path, columns: int, *args: str) -> str:
    """skyc's stdout and stderr as a terminal of ``columns`` shows them (colours removed)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "skyc", *args], stdin=slave, stdout=slave,
                            stderr=slave, env=_env(home, columns), cwd=ROOT)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the process closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    code = proc.wait(timeout=120)
    os.close(master)
    text = _ANSI.sub("", b"".join(chunks).decode()).replace("\r\n", "\n")
    assert code == 0, text
    return text


def _split(line: str) -> list[str]:
    return [c for c in re.split(r"\s{2,}", line.strip()) if c]


def _tables(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """(header, rows) of every table: a header line, a rule of ─, rows up to a blank."""
    lines = text.splitlines()
    out = []
    for i, line in enumerate(lines):
        if i == 0 or not line.strip() or set(line.strip()) != {"─"}:
            continue
        header = _split(lines[i - 1])
        rows = []
        for row in lines[i + 1:]:
            if not row.strip():
                break
            rows.append(_split(row)[-len(header):])
        out.append((header, rows))
    return out


def _kept_cells(text: str) -> set[str]:
    cells = set()
    for header, rows in _tables(text):
        for row in rows:
            if len(row) == len(header):
                cells |= {c for h, c in zip(header, row, strict=True) if h in _KEPT and c != "-"}
    return cells


def _whole_or_folded(cell: str, lines: list[str]) -> bool:
    """``cell`` on one line, or its start ending one line and its rest beginning the next
    at the same column (how a table folds a cell too wide for its column)."""
    if any(re.search(rf"(^|\s){re.escape(cell)}(\s|$)", line) for line in lines):
        return True
    for above, below in itertools.pairwise(lines):
        for k in range(1, len(cell)):
            head, rest = cell[:k], cell[k:]
            for m in re.finditer(rf"(?:^|(?<=\s)){re.escape(head)}(?=\s|$)", above):
                if below[m.start():m.start() + len(rest)] == rest:
                    return True
    return False


def _check(wide: str, narrow: str, columns: int) -> None:
    lines = narrow.splitlines()
    too_long = [line for line in lines if len(line) > columns]
    assert not too_long, too_long
    assert "…" not in narrow
    cells = _kept_cells(wide)
    assert cells, wide
    missing = sorted(c for c in cells if not _whole_or_folded(c, lines))
    assert not missing, (missing, narrow)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("home")


@pytest.mark.parametrize("args", [(), ("A100:8",), ("-a",)], ids=["summary", "A100:8", "all"])
@pytest.mark.parametrize("columns", [80, 100])
def test_show_gpus_fits(home: Path, args: tuple[str, ...], columns: int) -> None:
    wide = _in_terminal(home, 400, "show-gpus", *args)
    _check(wide, _in_terminal(home, columns, "show-gpus", *args), columns)


@pytest.mark.parametrize("columns", [80, 100])
def test_plan_of_a_pipeline_fits(home: Path, columns: int) -> None:
    args = ("plan", str(PIPELINE), "--no-diff")
    wide = _in_terminal(home, 400, *args)
    assert "pipeline: each step for its duration" in wide and "total: $" in wide
    narrow = _in_terminal(home, columns, *args)
    _check(wide, narrow, columns)
    # here even the longest infra and instance cells stay whole: the chosen row's mark
    # column goes (the title says which row is chosen) before a cell would fold
    lines = narrow.splitlines()
    folded = sorted(c for c in _kept_cells(wide)
                    if not any(re.search(rf"(^|\s){re.escape(c)}(\s|$)", x) for x in lines))
    assert not folded, (folded, narrow)
    if columns == 80:
        assert "task train (chosen: the first row)" in narrow
    # the prose wraps between words on a terminal: the verdict and the total are whole
    flat = " ".join(narrow.split())
    assert ("at the peak $43.0662/hr total (train: the steps run one after another, so "
            "their hourly prices are not added up;") in flat
    [total] = [x for x in wide.splitlines() if x.startswith("total: $")]
    assert " ".join(total.split()) in flat


def test_the_check_sees_a_cut_cell() -> None:
    """The checker itself: a cell cut short or missing fails it; a folded one passes."""
    wide = (" infra              instance       $/hr/node\n"
            " ──────────────────────────────────────────\n"
            " gcp/us-central1-a  a3-highgpu-8g    43.0662\n")
    folded = (" infra       instance       $/hr/node\n"
              " ────────────────────────────────────\n"
              " gcp/us-cen  a3-highgpu-8g    43.0662\n"
              " tral1-a                             \n")
    _check(wide, folded, 80)
    with pytest.raises(AssertionError):
        _check(wide, folded.replace("43.0662", "43.06…"), 80)
    with pytest.raises(AssertionError):
        _check(wide, folded.replace("a3-highgpu-8g", "a3-highgpu   "), 80)
