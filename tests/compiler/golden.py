"""Golden compile cases: tests/fixtures/compile/<cloud>/<case>/.

Each case holds placement.json, candidate.json, optionally config.json, and the
expected main.tf.json. ``SKYC_REGEN=1`` rewrites the expected files.
"""

from __future__ import annotations

import json
from pathlib import Path

from skyc.compiler import build_stack
from skyc.config import SkycConfig
from skyc.optimizer.plan import Placement
from skyc.stacks import STACK_FILE, Stack
from skyc.task.candidate import ResourceCandidate

ROOT = Path(__file__).resolve().parents[1] / "fixtures" / "compile"


def cases() -> list[Path]:
    return sorted(p.parent for p in ROOT.glob("*/*/placement.json"))


def case_id(case: Path) -> str:
    return f"{case.parent.name}/{case.name}"


def load(case: Path) -> tuple[str, Placement, ResourceCandidate, SkycConfig]:
    placement = Placement.model_validate_json((case / "placement.json").read_text())
    candidate = ResourceCandidate.model_validate_json((case / "candidate.json").read_text())
    config_file = case / "config.json"
    config = (
        SkycConfig.model_validate_json(config_file.read_text())
        if config_file.exists()
        else SkycConfig()
    )
    return case.name.replace("_", "-"), placement, candidate, config


def compile_case(case: Path, workspace: Path) -> Stack:
    cluster, placement, candidate, config = load(case)
    return build_stack(cluster, placement, candidate, config=config, workspace=workspace)


def expected(case: Path) -> str:
    return (case / STACK_FILE).read_text()


def write_expected(case: Path, text: str) -> None:
    json.loads(text)  # never store a broken golden file
    (case / STACK_FILE).write_text(text)
