"""A region's VPC quota, end to end: `skyc apply` (a subprocess) with the real terraform
+ AWS provider against a real moto server, behind the fault proxy, which answers
every CreateVpc in us-east-1 with EC2's own ``VpcLimitExceeded`` (the region already
holds as many VPCs as its quota allows).

The error is classified with its scope (the region, where the quota counts), so
failover moves to the next region instead of failing on an error it does not know,
and what the failed attempt created in us-east-1 is destroyed before it does.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.failover.aws_env import (
    INSTANCE_TYPE,
    AwsHome,
    cloud_resources,
    leaks,
    live_instances,
    make_home,
    owned_ids,
)
from tests.support.fault_proxy import FaultProxy, FaultRule
from tests.support.moto_server import MotoServer, start_moto
from tests.support.terraform import requires_aws_provider, requires_terraform

pytestmark = [pytest.mark.slow, pytest.mark.aws, requires_terraform, requires_aws_provider,
              pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def moto(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoServer]:
    with start_moto(tmp_path_factory.mktemp("moto") / "moto.log") as server:
        yield server


@pytest.fixture
def aws(tmp_path: Path, moto: MotoServer) -> Iterator[AwsHome]:
    with FaultProxy(upstream=moto.url) as proxy:
        yield make_home(tmp_path, moto, proxy)


def test_vpc_quota_in_one_region_fails_over_to_the_next_and_leaves_nothing(
        aws: AwsHome) -> None:
    aws.proxy.set_rules([FaultRule(action="CreateVpc", code="VpcLimitExceeded",
                                   region="us-east-1",
                                   message="The maximum number of VPCs has been reached.")])
    out = aws.skyc("apply", str(aws.task("vq", "aws")), "--yes")
    assert out.returncode == 0, out.stdout + out.stderr
    err = " ".join(out.stderr.split())  # undo the console's line wrapping
    # The whole region is passed over (not its other zone): the quota counts per region.
    assert (f"{INSTANCE_TYPE} aws/us-east-1 (use1-az1): VpcLimitExceeded "
            "-> trying aws/us-east-2 (use2-az1)") in err, out.stderr
    assert {(h.rule.code, h.request.region) for h in aws.proxy.hits} == {
        ("VpcLimitExceeded", "us-east-1")}

    [row] = aws.status("vq", "-v")
    assert (row["status"], row["region"]) == ("UP", "us-east-2")
    [failed] = [e for e in row["events"]
                if e["kind"] == "attempt" and e["data"].get("error") == "VpcLimitExceeded"]
    assert "quota 'VPCs per Region'" in failed["message"]
    assert "Service Quotas" in failed["message"]

    # Nothing of the us-east-1 attempt is left; all that exists is the cluster's state.
    assert all(not ids for kind, ids in cloud_resources(aws.moto).items()
               if kind.startswith("us-east-1 ")), cloud_resources(aws.moto)
    instances = live_instances(aws.moto, "us-east-2")
    assert [i["InstanceType"] for i in instances] == [INSTANCE_TYPE]
    assert leaks(aws.moto, owned_ids(aws.home, "vq")) == {}
