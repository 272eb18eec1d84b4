"""Where skyc keeps its files: ``$SKYC_HOME``, ``~/.skyc`` by default.

Apart from the config module, whose models the state, locks, logs and workspaces
that only need the directory do not load.
"""

from __future__ import annotations

import os
from pathlib import Path


def skyc_home() -> Path:
    """The directory that holds skyc's config, state, clusters and logs."""
    return Path(os.environ.get("SKYC_HOME") or Path.home() / ".skyc").expanduser()


def config_path() -> Path:
    return skyc_home() / "config.yaml"
