"""The flags of ``skyc plan`` and ``skyc apply`` that change the tasks as they are read:
``--env`` / ``--env-file``, ``--secret`` and the resource overrides (``--gpus`` ...)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skyc.cli.options import env_values


@dataclass(frozen=True)
class TaskFlags:
    env: list[str]
    env_file: Path | None
    secret: list[str]
    gpus: str | None = None
    cpus: str | None = None
    memory: str | None = None
    instance_type: str | None = None
    disk_size: int | None = None
    use_spot: bool | None = None
    num_nodes: int | None = None

    def env_values(self) -> dict[str, str]:
        """``--env-file`` then ``--env`` (which wins), read now."""
        return env_values(self.env_file, self.env)

    def secrets(self) -> dict[str, str | None]:
        """``--secret KEY=VAL`` or ``--secret KEY`` (None: from the environment)."""
        from skyc.task import parse_secret_flags

        return parse_secret_flags(self.secret)

    def overrides(self) -> dict[str, Any]:
        """The resource overrides given, keyed by the task field they replace."""
        from skyc.task.overrides import resource_overrides

        return resource_overrides(gpus=self.gpus, cpus=self.cpus, memory=self.memory,
                                  instance_type=self.instance_type, disk_size=self.disk_size,
                                  use_spot=self.use_spot, num_nodes=self.num_nodes)
