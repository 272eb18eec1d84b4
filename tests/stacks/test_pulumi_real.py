"""The Pulumi engine end to end with the real ``pulumi`` CLI and pulumi-aws plugin
against moto: runs wherever ``pulumi`` is on PATH, and is skipped (saying so)
elsewhere, e.g. on these machines, where the CLI cannot be installed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from skyc.apply.provision import provision, teardown
from skyc.settings.config import SkycConfig
from skyc.stacks import stack_engine
from tests.stacks.test_aws_moto import CANDIDATE, _gpu, _live_instances, aws_env
from tests.support.moto_server import MotoServer, moto_server
from tests.support.terraform import skyc_home

__all__ = ["aws_env", "moto_server", "skyc_home"]

pytestmark = [
    pytest.mark.slow, pytest.mark.aws,
    pytest.mark.skipif(shutil.which("pulumi") is None,
                       reason="no pulumi CLI on PATH (it cannot be installed on these machines)"),
    pytest.mark.skipif(shutil.which("pulumi-resource-aws") is None and not any(
        (Path.home() / ".pulumi" / "plugins").glob("resource-aws-*")),
        reason="no pulumi-aws provider plugin installed"),
]


def test_aws_cluster_with_pulumi_against_moto(
    aws_env: SkycConfig, moto_server: MotoServer, skyc_home: Path
) -> None:
    info = provision("pgpu", _gpu(2), CANDIDATE, config=aws_env, engine="pulumi")
    assert [n.name for n in info.nodes] == ["head", "worker1"]
    assert stack_engine(Path(info.workspace)) == "pulumi"
    assert len(_live_instances(moto_server, "pgpu")) == 2
    teardown("pgpu")
    assert _live_instances(moto_server, "pgpu") == []
