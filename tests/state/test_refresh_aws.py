"""`skyc status --refresh` notices an AWS cluster that stopped or went away on its own.

Real parts: the terraform binary and AWS provider against a moto server on 127.0.0.1;
`skyc` runs as a subprocess. The instances are stopped and then terminated with boto3
behind skyc's back. The cluster is provisioned through skyc.apply.provision (what `skyc
apply` does before it connects to the nodes): moto's instances run no machine, so
nothing here connects to them.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from skyc.apply.provision import provision, teardown
from skyc.model.plan import Placement
from skyc.settings.config import SkycConfig
from skyc.state.database import StateDB
from skyc.task.candidate import ResourceCandidate
from tests.failover.aws_env import cloud_resources
from tests.support.moto_server import CREDENTIALS, MotoServer, start_moto
from tests.support.terraform import requires_aws_provider, requires_terraform, skyc_home

__all__ = ["skyc_home"]

pytestmark = [pytest.mark.slow, pytest.mark.aws, requires_terraform, requires_aws_provider,
              pytest.mark.timeout(1200)]

PLACEMENT = Placement(cloud="aws", region="us-east-1", zone="use1-az1",
                      instance_type="m6i.large", num_nodes=1, hourly_cost=0.096)
CANDIDATE = ResourceCandidate(index=0, disk_tier="low")
DISKS_PER_HOUR = 256 * 0.08 / 730  # one node's default disk at the target's $/GB-month


@pytest.fixture(scope="module")
def moto(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoServer]:
    with start_moto(tmp_path_factory.mktemp("moto") / "moto.log") as server:
        yield server


def _skyc(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **CREDENTIALS, "COLUMNS": "200", "NO_COLOR": "1"}
    env.pop("AWS_PROFILE", None)
    return subprocess.run([sys.executable, "-m", "skyc", *args], env=env, text=True,
                          capture_output=True, stdin=subprocess.DEVNULL, timeout=600)


def _refreshed() -> dict[str, Any]:
    out = _skyc("status", "box", "--refresh", "--format", "json", "-v")
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    [row] = json.loads(out.stdout)["clusters"]
    assert isinstance(row, dict)
    return row


def _note(row: dict[str, Any]) -> str:
    refreshes = [e for e in row["events"] if e["kind"] == "refresh"]
    return str(refreshes[-1]["message"]) if refreshes else ""


def _instances(moto: MotoServer, cluster: str = "box") -> list[dict[str, Any]]:
    found = moto.client("ec2").describe_instances(
        Filters=[{"Name": "tag:skyc-cluster", "Values": [cluster]}])["Reservations"]
    return [i for r in found for i in r["Instances"]
            if i["State"]["Name"] not in ("terminated", "shutting-down")]


def test_refresh_sees_a_cluster_stopped_then_terminated_outside_skyc(
        moto: MotoServer, skyc_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in CREDENTIALS.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    skyc_home.mkdir(parents=True, exist_ok=True)
    (skyc_home / "config.yaml").write_text(f"aws:\n  endpoint_url: {moto.url}\n")
    config = SkycConfig.model_validate({"aws": {"endpoint_url": moto.url}})
    try:
        info = provision("box", PLACEMENT, CANDIDATE, config=config)
        with StateDB() as db:
            db.upsert_cluster_from_placement("box", PLACEMENT, engine="terraform")
            db.mark_cluster_up("box", info, PLACEMENT)
        row = _refreshed()
        assert (row["status"], _note(row)) == ("UP", "")
        [instance] = _instances(moto)
        ec2 = moto.client("ec2")

        # Stopped behind skyc's back (the console, a script): STOPPED, paying for disks.
        ec2.stop_instances(InstanceIds=[instance["InstanceId"]])
        row = _refreshed()
        assert row["status"] == "STOPPED"
        assert row["hourly_cost"] == pytest.approx(DISKS_PER_HOUR)
        note = _note(row)
        assert "status UP -> STOPPED: stopped outside skyc: aws_instance.node_0" in note, note
        assert "`skyc start box` resumes it" in note
        # ... and `skyc start` resumes it: the same instance, running, at its full price.
        out = _skyc("start", "box")
        assert out.returncode == 0, out.stdout + out.stderr
        assert [i["InstanceId"] for i in _instances(moto)] == [instance["InstanceId"]]
        assert _instances(moto)[0]["State"]["Name"] == "running"
        row = _refreshed()
        assert (row["status"], row["hourly_cost"]) == ("UP", pytest.approx(0.096))

        # Terminated behind skyc's back: INIT, naming what is gone and what to run.
        ec2.terminate_instances(InstanceIds=[instance["InstanceId"]])
        row = _refreshed()
        assert row["status"] == "INIT"
        note = _note(row)
        assert "deleted outside skyc: aws_ec2_instance_state.node_0, aws_instance.node_0" in note
        assert "`skyc apply` recreates them" in note
        # Provisioning again (apply's provisioning stage) recreates the instance: UP.
        info = provision("box", PLACEMENT, CANDIDATE, config=config)
        with StateDB() as db:
            db.mark_cluster_up("box", info, PLACEMENT)
        [again] = _instances(moto)
        assert again["InstanceId"] != instance["InstanceId"]
        assert _refreshed()["status"] == "UP"

        teardown("box")
        assert {k: v for k, v in cloud_resources(moto).items() if v} == {}
    finally:
        # A failed try leaves nothing behind for the rerun (nor for the next test's
        # leak check): what the engine's state lists is destroyed.
        with contextlib.suppress(Exception):
            teardown('box')


def test_a_recovery_asks_the_cloud_again_when_a_refresh_fails(
        moto: MotoServer, skyc_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a recovery's reason says of a lost node comes from a refresh; one that fails
    (here EC2 refuses DescribeInstances through the fault proxy) is run again, and two
    that fail leave the reason without the cloud's view rather than failing."""
    import skyc.apply.reconcile as reconcile
    from tests.support.fault_proxy import FaultProxy, FaultRule

    for key, value in CREDENTIALS.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.setattr(reconcile, "CLOUD_VIEW_RETRY_PAUSES_S", (0.1,))
    skyc_home.mkdir(parents=True, exist_ok=True)
    with FaultProxy(upstream=moto.url) as proxy:
        try:
            config = SkycConfig.model_validate({"aws": {"endpoint_url": proxy.url}})
            info = provision("lost", PLACEMENT, CANDIDATE, config=config)
            with StateDB() as db:
                db.upsert_cluster_from_placement("lost", PLACEMENT, engine="terraform")
                db.mark_cluster_up("lost", info, PLACEMENT)
            [instance] = _instances(moto, "lost")
            moto.client("ec2").terminate_instances(InstanceIds=[instance["InstanceId"]])

            def refused(times: int) -> FaultRule:
                return FaultRule(action="DescribeInstances", code="UnauthorizedOperation",
                                 status=403, times=times)

            proxy.set_rules([refused(2)])
            assert reconcile.cloud_view("lost") == ""
            assert len(proxy.hits) == 2  # one refused refresh, then one more, refused too

            proxy.set_rules([refused(1)])
            said = reconcile.cloud_view("lost")
            assert said == "; the cloud reports aws_ec2_instance_state.node_0, " \
                           "aws_instance.node_0 gone", said
            assert len(proxy.hits) == 3
            proxy.set_rules([])
            teardown("lost")
        finally:
            # A failed try leaves nothing behind for the rerun (nor for the next test's
            # leak check): what the engine's state lists is destroyed, through the proxy
            # its stack names, with no fault rule left.
            proxy.set_rules([])
            with contextlib.suppress(Exception):
                teardown("lost")
    assert {k: v for k, v in cloud_resources(moto).items() if v} == {}

