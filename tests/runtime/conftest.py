"""Fixtures: real sshd clusters (local ones, ``local_cluster``, are suite-wide:
tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.local_nodes import make_local_cluster as make_local_cluster
from tests.support.sshd import SshdCluster, sshd_cluster


@pytest.fixture
def sshd2(tmp_path: Path, skyc_home: Path) -> Iterator[SshdCluster]:
    yield from sshd_cluster(tmp_path / "sshd", 2)
