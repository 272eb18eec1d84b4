"""Test helpers: a minimal task (the optimizer's TaskLike) and the fixture catalog."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skyc.task.candidate import ResourceCandidate

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SMALL_CATALOG = FIXTURES / "catalog" / "small"


@dataclass
class FakeTask:
    cands: list[ResourceCandidate]
    name: str | None = "task"
    num_nodes: int = 1
    outputs: dict[str, float] = field(default_factory=dict)

    def candidates(self) -> list[ResourceCandidate]:
        return self.cands


def make_task(spec: dict[str, Any], i: int = 0) -> FakeTask:
    cands = [ResourceCandidate.model_validate({"index": k, **c})
             for k, c in enumerate(spec.get("candidates", [{}]))]
    gb = spec.get("outputs_gb", 0)
    return FakeTask(cands, name=spec.get("name", f"t{i}"), num_nodes=spec.get("num_nodes", 1),
                    outputs={"s3://bucket/out": gb} if gb else {})
