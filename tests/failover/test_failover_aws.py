"""Failover end to end: `skyc apply` (a subprocess) with the real terraform + AWS
provider against a real moto server, behind the fault proxy that answers chosen
RunInstances calls with EC2's own capacity and quota errors.

Each terraform apply/destroy against moto takes tens of seconds, so scenarios are
combined: one run fails over across a zone and then a region; one run exhausts
its attempts. After each, boto3 must find nothing that the final state lacks.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.failover.aws_env import (
    INSTANCE_TYPE,
    AwsHome,
    leaks,
    live_instances,
    make_home,
    owned_ids,
    state_ids,
)
from tests.support.fault_proxy import FaultProxy, FaultRule
from tests.support.moto_server import MotoServer, start_moto
from tests.support.terraform import requires_aws_provider, requires_terraform

pytestmark = [pytest.mark.slow, pytest.mark.aws, requires_terraform, requires_aws_provider,
              pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def moto(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoServer]:
    with start_moto(tmp_path_factory.mktemp("moto") / "moto.log") as server:
        yield server


@pytest.fixture(scope="module")
def proxy(moto: MotoServer) -> Iterator[FaultProxy]:
    with FaultProxy(upstream=moto.url) as running:
        yield running


@pytest.fixture
def aws(tmp_path: Path, moto: MotoServer, proxy: FaultProxy) -> AwsHome:
    moto.reset()
    proxy.set_rules([])
    proxy.hits.clear()
    return make_home(tmp_path, moto, proxy)


def test_zone_then_region_failover_then_refresh_and_destroy(aws: AwsHome) -> None:
    # use1-az1 has no capacity; the whole of us-east-1 is over its vCPU quota.
    aws.proxy.set_rules([
        FaultRule(code="InsufficientInstanceCapacity", zone="use1-az1"),
        FaultRule(code="VcpuLimitExceeded", region="us-east-1"),
    ])
    task = aws.task("fo", "aws")
    out = aws.skyc("apply", str(task), "--yes")
    assert out.returncode == 0, out.stdout + out.stderr
    err = " ".join(out.stderr.split())  # undo the console's line wrapping
    assert (f"{INSTANCE_TYPE} aws/us-east-1 (use1-az1): InsufficientInstanceCapacity "
            "-> trying aws/us-east-1 (use1-az2)") in err, out.stderr
    assert (f"{INSTANCE_TYPE} aws/us-east-1 (use1-az2): VcpuLimitExceeded "
            "-> trying aws/us-east-2 (use2-az1)") in err, out.stderr
    # (the SDK in the provider retries HTTP 500s such as InsufficientInstanceCapacity)
    seen = [(h.rule.code, h.request.zone_id) for h in aws.proxy.hits]
    assert sorted(set(seen), key=seen.index) == [
        ("InsufficientInstanceCapacity", "use1-az1"), ("VcpuLimitExceeded", "use1-az2"),
    ]

    # The cluster came up in us-east-2 and nothing of the failed attempts is left.
    [row] = aws.status("fo", "-v")
    assert (row["status"], row["region"], row["zone"]) == ("UP", "us-east-2", "use2-az1")
    assert [e["kind"] for e in row["events"]].count("attempt") == 3
    instances = live_instances(aws.moto, "us-east-2")
    assert [i["InstanceType"] for i in instances] == [INSTANCE_TYPE]
    assert instances[0]["Placement"]["AvailabilityZone"] == "us-east-2a"  # use2-az1
    assert live_instances(aws.moto, "us-east-1") == []
    owned = owned_ids(aws.home, "fo")
    assert instances[0]["InstanceId"] in owned
    assert leaks(aws.moto, owned) == {}

    # Refresh (UP while intact is checked on local infra, in test_refresh.py):
    # once the instance is terminated behind skyc's back, the cluster is INIT.
    aws.moto.client("ec2", "us-east-2").terminate_instances(
        InstanceIds=[instances[0]["InstanceId"]])
    [row] = aws.status("fo", "--refresh", "-v")
    assert row["status"] == "INIT"
    assert "aws_instance.node_0" in row["events"][-1]["message"]

    out = aws.skyc("destroy", "fo", "--yes")
    assert out.returncode == 0, out.stdout + out.stderr
    assert leaks(aws.moto, set()) == {}
    assert aws.status() == []


def test_every_candidate_fails_lists_attempts_and_destroy_cleans(aws: AwsHome) -> None:
    aws.proxy.set_rules([FaultRule(code="InsufficientInstanceCapacity")])
    task = aws.task("nocap", "aws/us-east-1")
    out = aws.skyc("apply", str(task), "--yes", "--max-attempts", "2")
    assert out.returncode == 1, out.stdout + out.stderr
    err = " ".join(out.stderr.split())
    assert "could not provision the cluster: the attempt limit was reached" in err
    assert (f"1. {INSTANCE_TYPE} aws/us-east-1 (use1-az1): InsufficientInstanceCapacity"
            in err)
    assert (f"2. {INSTANCE_TYPE} aws/us-east-1 (use1-az2): InsufficientInstanceCapacity"
            in err)
    assert "Traceback" not in out.stderr
    assert {h.request.zone_id for h in aws.proxy.hits} == {"use1-az1", "use1-az2"}
    # Each failed attempt was destroyed before the next one.
    assert state_ids(aws.workspace("nocap")) == set()
    assert leaks(aws.moto, set()) == {}
    # A first apply that left nothing behind leaves no record (the attempts are in the
    # apply's own output and log).
    assert aws.status() == []

    out = aws.skyc("destroy", "nocap", "--yes")
    assert out.returncode == 0, out.stdout + out.stderr
    assert aws.status() == []
    assert leaks(aws.moto, set()) == {}
