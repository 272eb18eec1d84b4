"""Fixtures: local clusters (node directories under tmp) and real sshd clusters."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from skyc.model.nodes import ClusterInfo, Node
from tests.support.sshd import SshdCluster, sshd_cluster


def make_local_cluster(root: Path, count: int = 2, name: str = "loc") -> ClusterInfo:
    names = ["head"] + [f"worker{i}" for i in range(1, count)]
    return ClusterInfo(
        name=name, cloud="local", workspace=str(root / "workspace"),
        nodes=[Node(name=names[i], rank=i, transport="local", ip="127.0.0.1",
                    node_dir=str(root / f"node{i}")) for i in range(count)])


@pytest.fixture
def skyc_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "skyc_home"
    monkeypatch.setenv("SKYC_HOME", str(home))
    return home


@pytest.fixture
def local_cluster(tmp_path: Path, skyc_home: Path) -> ClusterInfo:
    return make_local_cluster(tmp_path)


@pytest.fixture
def sshd2(tmp_path: Path, skyc_home: Path) -> Iterator[SshdCluster]:
    yield from sshd_cluster(tmp_path / "sshd", 2)
