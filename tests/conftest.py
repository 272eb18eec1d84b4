"""Suite-wide isolation: no test reads or writes the user's ~/.skyc, and terraform
never goes to a registry for providers when this machine has a local mirror."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from skyc.model.nodes import ClusterInfo
from tests.support.local_nodes import make_local_cluster
from tests.support.terraform import TERRAFORM_ENV

_MIRROR = Path("/opt/tf-plugins")

os.environ.setdefault("SKYC_HOME", tempfile.mkdtemp(prefix="skyc-test-home-"))
# The suite picks its own state: a developer's team state never leaks into it.
os.environ.pop("SKYC_STATE_URL", None)
if _MIRROR.is_dir():
    os.environ.setdefault("SKYC_TF_PLUGIN_DIR", str(_MIRROR))
# No terraform run (in process or in a subprocess skyc) asks for instance metadata.
os.environ.update(TERRAFORM_ENV)


@pytest.fixture
def skyc_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "skyc_home"
    monkeypatch.setenv("SKYC_HOME", str(home))
    return home


@pytest.fixture
def local_cluster(tmp_path: Path, skyc_home: Path) -> ClusterInfo:
    """Two local nodes (directories under the test's folder), with their own SKYC_HOME."""
    return make_local_cluster(tmp_path)
