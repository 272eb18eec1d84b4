"""``skyc stop`` / ``skyc start`` as stack changes: on moto (the real terraform binary
and AWS provider against a moto server on 127.0.0.1) the volumes survive a stop and a
start; elsewhere (local, spot) stopping is refused with the reason."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from skyc.apply.power import start_cluster, stop_cluster, stop_refusal
from skyc.apply.provision import plan_changes, provision, teardown
from skyc.errors import UnsupportedFeature
from skyc.model.plan import Placement
from skyc.settings.config import SkycConfig
from skyc.state.database import StateDB
from skyc.task.candidate import ResourceCandidate
from tests.e2e.conftest import Skyc
from tests.support.moto_server import CREDENTIALS, MotoServer, moto_server
from tests.support.terraform import requires_aws_provider, requires_terraform, skyc_home

__all__ = ["moto_server", "skyc_home"]

CANDIDATE = ResourceCandidate(index=0, disk_tier="low")


class _Quiet:
    def stage(self, name: str, detail: str = "") -> None: ...
    def plan(self, plan: Any) -> None: ...
    def attempt(self, attempt: Any, next_placement: Any) -> None: ...
    def engine_event(self, event: Any) -> None: ...
    def log_line(self, node: str, line: str) -> None: ...


def _cpu(spot: bool = False) -> Placement:
    return Placement(cloud="aws", region="us-east-1", zone="use1-az1",
                     instance_type="m6i.large", num_nodes=2, hourly_cost=0.192,
                     use_spot=spot)


def _instances(server: MotoServer, cluster: str) -> list[dict[str, Any]]:
    ec2 = server.client("ec2")
    found = ec2.describe_instances(
        Filters=[{"Name": "tag:skyc-cluster", "Values": [cluster]}])["Reservations"]
    return [i for r in found for i in r["Instances"]
            if i["State"]["Name"] not in ("terminated", "shutting-down")]


def _volumes(instances: list[dict[str, Any]]) -> dict[str, list[str]]:
    return {i["InstanceId"]: sorted(m["Ebs"]["VolumeId"] for m in i["BlockDeviceMappings"])
            for i in instances}


@pytest.mark.slow
@pytest.mark.aws
@requires_terraform
@requires_aws_provider
def test_stop_then_start_keeps_the_instances_and_their_volumes(
        moto_server: MotoServer, skyc_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in CREDENTIALS.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    moto_server.reset()
    skyc_home.mkdir(parents=True, exist_ok=True)
    (skyc_home / "config.yaml").write_text(f"aws:\n  endpoint_url: {moto_server.url}\n")
    config = SkycConfig.model_validate({"aws": {"endpoint_url": moto_server.url}})
    info = provision("box", _cpu(), CANDIDATE, config=config)
    with StateDB() as db:
        db.upsert_cluster_from_placement("box", _cpu(), engine="terraform")
        db.mark_cluster_up("box", info, _cpu())
    before = _instances(moto_server, "box")
    assert {i["State"]["Name"] for i in before} == {"running"}
    volumes = _volumes(before)
    assert len(volumes) == 2 and all(volumes.values())

    assert stop_cluster("box", _Quiet()) is True
    stopped = _instances(moto_server, "box")
    assert {i["State"]["Name"] for i in stopped} == {"stopped"}
    assert _volumes(stopped) == volumes
    with StateDB() as db:
        record = db.get_cluster("box")
        assert record is not None and record.status == "STOPPED"
        # Only the disks are charged: 2 nodes x 256 GB at the target's $/GB-month.
        assert record.hourly_cost == pytest.approx(2 * 256 * 0.08 / 730)
    assert stop_cluster("box", _Quiet()) is False          # already stopped

    started = start_cluster("box", _Quiet())
    assert started is not None and len(started.nodes) == 2
    running = _instances(moto_server, "box")
    assert {i["State"]["Name"] for i in running} == {"running"}
    assert _volumes(running) == volumes                     # the same disks, attached again
    with StateDB() as db:
        record = db.get_cluster("box")
        assert record is not None and record.status == "UP"
        assert record.hourly_cost == pytest.approx(0.192)
    again = plan_changes("box", _cpu(), CANDIDATE, config=config)
    assert not again.has_changes, [c for c in again.changes if c.action != "no-op"]
    teardown("box")
    assert _instances(moto_server, "box") == []


def test_spot_and_local_clusters_are_refused_with_the_reason(skyc: Skyc) -> None:
    skyc.write("t.yaml", "name: loc\nresources:\n  infra: local\nrun: echo hi\n")
    skyc.ok("apply", "t.yaml", "--yes")
    refused = skyc("stop", "loc")
    assert refused.returncode != 0 and "Traceback" not in refused.output
    assert "cannot be stopped: local nodes cannot be stopped" in refused.stderr, str(refused)
    assert "skyc destroy loc" in refused.stderr
    missing = skyc("start", "nothing")
    assert missing.returncode != 0 and "no cluster named 'nothing'" in missing.stderr
    skyc.ok("destroy", "loc", "--yes")


def test_spot_placements_cannot_be_stopped(skyc_home: Path) -> None:
    from skyc.apply.provision import REQUEST_FILE
    from skyc.stacks.workspace import cluster_workspace
    from skyc.state.database import ClusterRecord

    ws = cluster_workspace("spotty")
    ws.mkdir(parents=True)
    (ws / REQUEST_FILE).write_text(json.dumps({
        "placement": _cpu(spot=True).model_dump(mode="json"),
        "candidate": CANDIDATE.model_dump(mode="json")}))
    record = ClusterRecord(name="spotty", cloud="aws", status="UP")
    why = stop_refusal("spotty", record)
    assert why is not None and "spot instances cannot be stopped" in why
    with StateDB() as db:
        db.upsert_cluster(record)
    with pytest.raises(UnsupportedFeature, match="spot instances cannot be stopped"):
        stop_cluster("spotty", _Quiet())
    with StateDB() as db:
        after = db.get_cluster("spotty")
        assert after is not None and after.status == "UP"   # nothing was changed
