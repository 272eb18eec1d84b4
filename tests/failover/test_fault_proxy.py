"""The fault-injecting EC2 proxy, against a real moto server and real terraform."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.fault_proxy import FaultProxy, FaultRule
from tests.support.moto_server import MotoServer, start_moto
from tests.support.record_fault_fixtures import (
    CODES,
    FIXTURE_DIR,
    moto_ami,
)


@pytest.fixture(scope="module")
def moto(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoServer]:
    # moto's own AMIs (owner "amazon"): these tests launch plain instances with boto3.
    # No replaying front: these tests are about the proxy alone.
    log = tmp_path_factory.mktemp("moto") / "moto.log"
    with start_moto(log, skyc_amis=False, front=False) as server:
        yield server


def _ec2(url: str, region: str = "us-east-1") -> Any:
    import boto3
    from botocore.config import Config

    return boto3.client(
        "ec2", region_name=region, endpoint_url=url, aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(retries={"total_max_attempts": 1, "mode": "standard"}),
    )


def _run(client: Any, ami: str, zone: str | None = None, **kw: Any) -> Any:
    if zone is not None:
        kw["Placement"] = {"AvailabilityZone": zone}
    return client.run_instances(
        ImageId=ami, InstanceType=kw.pop("InstanceType", "t3.micro"), MinCount=1, MaxCount=1,
        **kw,
    )


def _error(exc: pytest.ExceptionInfo[Exception]) -> tuple[str, int]:
    response = exc.value.response  # type: ignore[attr-defined]
    return response["Error"]["Code"], response["ResponseMetadata"]["HTTPStatusCode"]


def test_faulted_zone_gets_the_exact_code_other_zone_reaches_moto(moto: MotoServer) -> None:
    from botocore.exceptions import ClientError

    ami = moto_ami(moto.url)
    with FaultProxy(moto.url, [FaultRule(zone="us-east-1a")]) as proxy:
        client = _ec2(proxy.url)
        with pytest.raises(ClientError) as exc:
            _run(client, ami, "us-east-1a")
        assert _error(exc) == ("InsufficientInstanceCapacity", 500)
        assert "t3.micro capacity" in str(exc.value)
        assert len(proxy.hits) == 1
        assert proxy.hits[0].request.zone == "us-east-1a"
        assert proxy.hits[0].request.region == "us-east-1"

        made = _run(client, ami, "us-east-1b")["Instances"][0]
        assert made["Placement"]["AvailabilityZone"] == "us-east-1b"
        assert len(proxy.hits) == 1
    # the instance really exists in moto (asked directly, not through the proxy)
    ids = [
        i["InstanceId"]
        for r in _ec2(moto.url).describe_instances()["Reservations"] for i in r["Instances"]
    ]
    assert made["InstanceId"] in ids



def test_zone_id_rule_matches_a_subnet_launch_with_empty_placement(moto: MotoServer) -> None:
    # As the AWS provider sends it: the subnet in NetworkInterface.1.SubnetId and an
    # empty Placement.AvailabilityZone; the rule names the zone ID (use1-az1).
    from botocore.exceptions import ClientError

    ami = moto_ami(moto.url)
    direct = _ec2(moto.url)
    vpc = direct.create_vpc(CidrBlock="10.1.0.0/16")["Vpc"]["VpcId"]
    subnets = {
        zone_id: direct.create_subnet(
            VpcId=vpc, CidrBlock=cidr, AvailabilityZoneId=zone_id)["Subnet"]["SubnetId"]
        for zone_id, cidr in (("use1-az1", "10.1.0.0/20"), ("use1-az2", "10.1.16.0/20"))
    }
    with FaultProxy(moto.url, [FaultRule(zone="use1-az1")]) as proxy:
        client = _ec2(proxy.url)

        def launch(zone_id: str) -> Any:
            nic = {"DeviceIndex": 0, "SubnetId": subnets[zone_id],
                   "AssociatePublicIpAddress": True}
            return _run(client, ami, "", NetworkInterfaces=[nic])

        with pytest.raises(ClientError) as exc:
            launch("use1-az1")
        assert _error(exc) == ("InsufficientInstanceCapacity", 500)
        assert (proxy.hits[0].request.zone, proxy.hits[0].request.zone_id) == (
            "us-east-1b", "use1-az1")
        made = launch("use1-az2")["Instances"][0]
        assert made["SubnetId"] == subnets["use1-az2"]
        assert len(proxy.hits) == 1

def test_subnet_zone_is_resolved_through_moto(moto: MotoServer) -> None:
    from botocore.exceptions import ClientError

    ami = moto_ami(moto.url)
    direct = _ec2(moto.url)
    subnets = direct.describe_subnets()["Subnets"]
    by_zone = {s["AvailabilityZone"]: s["SubnetId"] for s in subnets}
    with FaultProxy(moto.url, [FaultRule(code="Unsupported", zone="us-east-1a")]) as proxy:
        client = _ec2(proxy.url)
        with pytest.raises(ClientError) as exc:
            _run(client, ami, SubnetId=by_zone["us-east-1a"])
        assert _error(exc) == ("Unsupported", 400)
        _run(client, ami, SubnetId=by_zone["us-east-1c"])
        assert [h.request.zone for h in proxy.hits] == ["us-east-1a"]


def test_region_and_instance_type_rules(moto: MotoServer) -> None:
    from botocore.exceptions import ClientError

    rules = [
        FaultRule(code="VcpuLimitExceeded", region="us-west-2"),
        FaultRule(code="InsufficientInstanceCapacity", instance_type="p4d.24xlarge"),
    ]
    with FaultProxy(moto.url, rules) as proxy:
        west = _ec2(proxy.url, "us-west-2")
        with pytest.raises(ClientError) as exc:
            _run(west, moto_ami_in(moto, "us-west-2"))
        assert _error(exc) == ("VcpuLimitExceeded", 400)
        east = _ec2(proxy.url, "us-east-1")
        ami = moto_ami(moto.url)
        _run(east, ami)  # t3.micro in us-east-1: no rule matches
        with pytest.raises(ClientError) as exc:
            _run(east, ami, InstanceType="p4d.24xlarge")
        assert _error(exc) == ("InsufficientInstanceCapacity", 500)
        assert [h.rule.code for h in proxy.hits] == [
            "VcpuLimitExceeded", "InsufficientInstanceCapacity",
        ]


def moto_ami_in(moto: MotoServer, region: str) -> str:
    images = _ec2(moto.url, region).describe_images(Owners=["amazon"])["Images"]
    return str(sorted(i["ImageId"] for i in images)[0])


def test_times_and_rules_changed_at_run_time(moto: MotoServer) -> None:
    from botocore.exceptions import ClientError

    ami = moto_ami(moto.url)
    with FaultProxy(moto.url, [FaultRule(code="AuthFailure", times=1)]) as proxy:
        client = _ec2(proxy.url)
        with pytest.raises(ClientError) as exc:
            _run(client, ami)
        assert _error(exc) == ("AuthFailure", 401)
        _run(client, ami)  # the rule is used up
        proxy.set_rules([FaultRule(code="InstanceLimitExceeded", zone="us-east-1b")])
        with pytest.raises(ClientError) as exc:
            _run(client, ami, "us-east-1b")
        assert _error(exc) == ("InstanceLimitExceeded", 400)
        proxy.set_rules([])
        _run(client, ami, "us-east-1b")
        assert [h.rule.code for h in proxy.hits] == ["AuthFailure", "InstanceLimitExceeded"]


def test_other_actions_and_services_pass_through(moto: MotoServer) -> None:
    import boto3

    rule = FaultRule(action="RunInstances")  # faults every RunInstances
    with FaultProxy(moto.url, [rule]) as proxy:
        via_proxy = _ec2(proxy.url).describe_availability_zones()["AvailabilityZones"]
        direct = _ec2(moto.url).describe_availability_zones()["AvailabilityZones"]
        assert via_proxy == direct and len(direct) >= 3
        creds: dict[str, Any] = {
            "region_name": "us-east-1", "endpoint_url": proxy.url,
            "aws_access_key_id": "testing", "aws_secret_access_key": "testing",
        }
        s3 = boto3.client("s3", **creds)
        s3.create_bucket(Bucket="skyc-proxy-test")
        s3.put_object(Bucket="skyc-proxy-test", Key="k", Body=b"payload")
        assert s3.get_object(Bucket="skyc-proxy-test", Key="k")["Body"].read() == b"payload"
        identity = boto3.client("sts", **creds).get_caller_identity()
        assert identity["Account"]
        assert proxy.hits == []
        assert any(r is not None and r.action == "DescribeAvailabilityZones"
                   for r in proxy.forwarded)


def _send_again(request: Any, attempt: int, invocation: bytes) -> tuple[int, bytes]:
    """``request`` (as botocore sent it) sent again as the SDK's retry ``attempt``."""
    import urllib.error
    import urllib.request

    headers = {k: (v.decode() if isinstance(v, bytes) else v)
               for k, v in request.headers.items()}
    headers["amz-sdk-request"] = f"attempt={attempt}; max=3"
    headers["amz-sdk-invocation-id"] = invocation.decode()
    body = request.body.encode() if isinstance(request.body, str) else request.body
    retry = urllib.request.Request(request.url, data=body, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(retry, timeout=30) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _retried_key_pair(url: str, upstream: str, proxy: FaultProxy) -> None:
    """A client that lost the answer to its CreateKeyPair retries it (the same
    invocation id, attempt 2): it gets the first answer, and moto runs it once; a new
    operation with the same key name reaches moto and gets EC2's Duplicate error."""
    sent: list[Any] = []
    client = _ec2(url)
    client.meta.events.register("before-send.ec2.CreateKeyPair",
                                lambda request, **_: sent.append(request))
    first = client.create_key_pair(KeyName="skyc-retried")
    [request] = sent
    assert request.headers["amz-sdk-request"].startswith(b"attempt=1")
    invocation = request.headers["amz-sdk-invocation-id"]
    status, body = _send_again(request, 2, invocation)
    assert status == 200 and first["KeyFingerprint"].encode() in body
    assert [(i, a) for i, a, _ in proxy.replayed] == [(invocation.decode(), 2)]
    pairs = _ec2(upstream).describe_key_pairs()["KeyPairs"]
    assert [p["KeyName"] for p in pairs].count("skyc-retried") == 1
    status, body = _send_again(request, 2, b"another-operation")
    assert status == 400 and b"InvalidKeyPair.Duplicate" in body


def test_a_retry_of_an_answered_request_gets_the_answer_again(moto: MotoServer) -> None:
    with FaultProxy(moto.url) as proxy:
        _retried_key_pair(proxy.url, moto.url, proxy)


def test_the_moto_fixture_s_url_is_a_replaying_front(tmp_path: Path) -> None:
    """What the AWS tests reach (``start_moto``'s ``url``) replays a retry the same way,
    with no fault rules: the provider's retries after a lost answer never run twice."""
    with start_moto(tmp_path / "moto.log", skyc_amis=False) as server:
        assert server.front is not None and server.url != server.upstream_url
        _retried_key_pair(server.url, server.upstream_url, server.front)
    assert server.front is None and server.process.poll() is not None


@pytest.mark.parametrize("code", CODES)
def test_recorded_fixture_shape(code: str) -> None:
    lines = (FIXTURE_DIR / f"{code}.jsonl").read_text().splitlines()
    assert lines
    for line in lines:
        doc = json.loads(line)
        assert doc["type"] == "diagnostic" and doc["@level"] == "error"
        diag = doc["diagnostic"]
        assert diag["severity"] == "error"
        assert diag["address"] == "aws_instance.node"
        assert f"api error {code}: " in diag["summary"]
        assert "RunInstances" in diag["summary"]
