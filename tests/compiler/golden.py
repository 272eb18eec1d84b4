"""Golden compile cases: tests/fixtures/compile/<target>/<case>/.

Each case holds placement.json, candidate.json, optionally config.json, and the
expected files of every engine its target supports (terraform: main.tf.json;
pulumi: __main__.py and Pulumi.yaml). ``outcomes.json`` (next to the target
folders) records what every registered target does with every case: ``ok`` or
the error it refuses it with. ``SKYC_REGEN=1`` rewrites the expected files.

Every case's config names its owner (:data:`OWNER`, unless the case's config.json
names one), so the names its owner's hash gives the cloud resources do not depend on
the machine's user and host.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from skyc.compiler import build_stack, target
from skyc.model.plan import Placement
from skyc.settings.config import SkycConfig
from skyc.stacks import Stack, emit
from skyc.task.candidate import ResourceCandidate

ROOT = Path(__file__).resolve().parents[1] / "fixtures" / "compile"
OUTCOMES = ROOT / "outcomes.json"
OWNER = "alice@workstation"


def regen() -> bool:
    return os.environ.get("SKYC_REGEN") == "1"


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
    if config.user is None:
        config = config.model_copy(update={"user": OWNER})
    return case.name.replace("_", "-"), placement, candidate, config


def compile_case(case: Path, workspace: Path) -> Stack:
    cluster, placement, candidate, config = load(case)
    return build_stack(cluster, placement, candidate, config=config, workspace=workspace)


def engines(case: Path) -> tuple[str, ...]:
    """The engines of the case's own target."""
    return target(case.parent.name).engines


def emitted(case: Path, engine: str, workspace: Path) -> dict[str, str]:
    return emit(compile_case(case, workspace), engine)


def expected(case: Path, names: list[str]) -> dict[str, str]:
    return {name: (case / name).read_text() for name in names if (case / name).exists()}


def write_expected(case: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        if name.endswith(".json"):
            json.loads(text)  # never store a broken golden file
        (case / name).write_text(text)
