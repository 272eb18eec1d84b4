"""A saved plan applied on AWS against moto: real terraform + AWS provider, moto on
127.0.0.1 behind the fault proxy (passing everything through here).

``plan -o`` runs the engine in a temporary folder (the cluster's workspace is not
created); ``apply FILE`` then runs exactly one engine plan in the workspace (with the
real SSH key, generated there), checks it lists the reviewed changes, and applies
that saved plan: no second plan (counted from the engine's per-run logs).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.failover.aws_env import AwsHome, make_home
from tests.review.test_reviewed_apply import engine_runs, tree_digest
from tests.support.fault_proxy import FaultProxy
from tests.support.moto_server import start_moto
from tests.support.terraform import requires_aws_provider, requires_terraform

pytestmark = [pytest.mark.slow, pytest.mark.aws, requires_terraform, requires_aws_provider,
              pytest.mark.timeout(1800)]


@pytest.fixture(scope="module")
def aws(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AwsHome]:
    root = tmp_path_factory.mktemp("planfile")
    with start_moto(root / "moto.log") as moto, FaultProxy(upstream=moto.url) as proxy:
        yield make_home(root, moto, proxy)


def test_a_saved_plan_applies_with_no_second_engine_plan(aws: AwsHome) -> None:
    task = aws.task("reviewed", "aws/us-east-1")
    out = aws.home.parent / "plan.skyc"
    before = tree_digest(aws.home)
    r = aws.skyc("plan", str(task), "-o", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    assert tree_digest(aws.home) == before          # no key, no workspace, no lock
    [st] = json.loads(out.read_text())["stacks"]
    assert ["aws_instance.node_0", "create"] in st["changes"] and st["engine_plan"]

    r = aws.skyc("apply", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    ws = aws.workspace("reviewed")
    assert (engine_runs(ws, "plan"), engine_runs(ws, "apply")) == (1, 1)
    assert (ws / "keys").is_dir()                    # the real key, made by apply
    [row] = aws.status()
    assert row["status"] == "UP"

    r = aws.skyc("apply", str(out))                   # the cluster moved since
    assert r.returncode == 1 and "cluster reviewed changed since the plan" in r.stderr
    assert engine_runs(ws, "plan") == 1
    assert aws.skyc("destroy", "reviewed", "--yes").returncode == 0
