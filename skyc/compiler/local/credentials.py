"""No credentials: this machine is always available."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from skyc.compiler.base import Credentials
from skyc.settings.config import SkycConfig


def credentials(
    env: Mapping[str, str], home: Path, config: SkycConfig | None = None
) -> Credentials:
    return Credentials(ok=True, reason="no credentials needed")
