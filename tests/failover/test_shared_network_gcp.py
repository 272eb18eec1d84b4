"""GCP clusters share their region's VPC network, through skyc's own provisioning with the
Pulumi engine: the region's network stack is applied first, each cluster's stack gets
its ids as inputs, and the network goes with the last cluster. The ``pulumi`` CLI
cannot be installed here: tests/support/pulumi_standin.py answers the Automation API as
the CLI does, running each program under Pulumi's mock runtime (no cloud is reached)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skyc.apply.networks import ensure_network
from skyc.apply.provision import plan_changes, provision, teardown
from skyc.errors import ProvisionError
from skyc.model.plan import Placement
from skyc.settings.config import SkycConfig
from skyc.stacks.registry import open_engine
from skyc.stacks.workspace import cluster_workspace
from skyc.state.database import ClusterRecord, StateDB
from skyc.state.networks import get_network
from skyc.task.candidate import ResourceCandidate

pytestmark = [pytest.mark.slow]

NETWORK = "network-gcp-us-central1"


def _placement(zone: str) -> Placement:
    return Placement(cloud="gcp", region="us-central1", zone=zone,
                     instance_type="n2-standard-8", num_nodes=1, hourly_cost=0.4)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    pytest.importorskip("pulumi_gcp", reason="the Pulumi SDKs (skyc[pulumi]) are not installed")
    from tests.support.pulumi_standin import install

    monkeypatch.setenv("SKYC_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SKYC_PULUMI_ROOT", str(install(tmp_path / "standin")))
    return tmp_path / "home"


CONFIG = SkycConfig.model_validate({"gcp": {"project": "my-project-1"}, "user": "ann@lab"})


def _apply(name: str, zone: str, said: list[str]) -> None:
    """What provision() does before it reads the nodes (the stand-in's outputs are
    placeholders, not addresses): the network, then the cluster's stack."""
    with StateDB() as db:  # recorded first, as an apply's attempt records it
        db.upsert_cluster(ClusterRecord(name=name, cloud="gcp", region="us-central1",
                                        status="INIT"))
        ensure_network(name, _placement(zone), CONFIG, db,
                       lambda stage, text: said.append(f"{stage}: {text}"))
    diff = plan_changes(name, _placement(zone), ResourceCandidate(index=0), config=CONFIG)
    open_engine("pulumi", cluster_workspace(name)).apply(diff)


def test_two_clusters_share_the_region_s_network_and_it_goes_with_the_last(home: Path) -> None:
    said: list[str] = []
    for name, zone in (("a", "us-central1-a"), ("b", "us-central1-b")):
        _apply(name, zone, said)
    assert len([s for s in said if s.startswith(f"network: creating {NETWORK}")]) == 1
    with StateDB() as db:
        record = get_network(db, NETWORK)
    assert record is not None and record.status == "READY"
    assert (record.users, record.zones) == (["a", "b"], ["us-central1-a", "us-central1-b"])
    for name in ("a", "b"):  # each cluster's stack was given the network's ids
        inputs = json.loads((home / "clusters" / name / "network.json").read_text())
        assert inputs == {"vpc_id": record.outputs["vpc_id"],
                          "subnet_id": record.outputs["subnet_id"]}
        program = (home / "clusters" / name / "__main__.py").read_text()
        assert "gcp.compute.Network(" not in program and 'config.require("vpc_id")' in program
    network_program = (home / "networks" / NETWORK / "__main__.py").read_text()
    assert "gcp.compute.Network(" in network_program

    teardown("a")
    with StateDB() as db:
        db.remove_cluster("a")
        assert get_network(db, NETWORK) is not None   # b still uses it
    teardown("b")
    with StateDB() as db:
        assert get_network(db, NETWORK) is None
    assert not (home / "networks" / NETWORK).exists()


def test_a_network_that_fails_is_classified_and_removed(
        home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # GCP's own words for the project's network quota, on the network resource.
    monkeypatch.setenv("STANDIN_FAIL_TYPE", "gcp:compute/network:Network")
    monkeypatch.setenv("STANDIN_FAIL", (
        "error creating Network: googleapi: Error 403: Quota 'NETWORKS' exceeded.  "
        "Limit: 5.0 globally., quotaExceeded"))
    with pytest.raises(ProvisionError) as caught:
        provision("c", _placement("us-central1-a"), ResourceCandidate(index=0), config=CONFIG)
    assert caught.value.code == "QUOTA_EXCEEDED" and caught.value.scope == "cloud"
    with StateDB() as db:
        assert get_network(db, NETWORK) is None
    assert not (home / "networks" / NETWORK).exists()
    assert not (home / "clusters" / "c" / "__main__.py").exists()  # its stack never ran
