"""GCP nodes get the cluster's own service account (one identity per cluster, granted no
role by its stack) with the config's scopes, on VMs and TPU VMs alike. Checked as
emitted arguments here; tests/compiler/test_gcp_programs.py runs the same programs
under Pulumi's mock runtime with the real pulumi_gcp classes (no Pulumi CLI or GCP
account exists here)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from skyc.compiler import build_stack
from skyc.compiler.gcp import names
from skyc.compiler.gcp.config import CLOUD_PLATFORM, GcpConfig
from skyc.model.plan import Placement
from skyc.model.stack import Block, Ref, Stack
from skyc.settings.config import SkycConfig
from skyc.task.candidate import ResourceCandidate

T4 = Placement(cloud="gcp", region="us-central1", zone="us-central1-a",
               instance_type="n1-highmem-4", accelerators={"T4": 1}, hourly_cost=0.6,
               num_nodes=2)
V5E = Placement(cloud="gcp", region="us-west4", zone="us-west4-a", instance_type="TPU-VM",
                accelerators={"tpu-v5litepod-8": 1}, hourly_cost=9.6)
_ACCOUNT_ID = re.compile(r"^[a-z](?:[-a-z0-9]{4,28}[a-z0-9])$")


def _stack(placement: Placement, config: SkycConfig | None = None) -> Stack:
    return build_stack("train", placement, ResourceCandidate(index=0),
                       config=config or SkycConfig(), workspace=Path("/nonexistent"))


@pytest.mark.parametrize("placement", [T4, V5E], ids=["vm", "tpu-vm"])
def test_every_node_runs_as_the_cluster_s_own_service_account(placement: Placement) -> None:
    stack = _stack(placement)
    account = stack.resource("service_account")
    assert account.type_for("pulumi") == "gcp.serviceaccount.Account"
    assert _ACCOUNT_ID.match(account.properties["account_id"])
    nodes = [r for r in stack.resources if r.key.startswith(("node_", "tpu_"))]
    assert nodes
    for node in nodes:
        block = node.properties["service_account"]
        assert isinstance(block, Block)
        assert block.values == {"email": Ref(resource="service_account", attribute="email"),
                                "scopes": [CLOUD_PLATFORM]}
        # The email reference orders the account before the node.
    # Granted nothing by the stack: no IAM binding or role of any kind.
    assert not [r for r in stack.resources if "iam" in r.type_for("pulumi").lower()]


def test_scopes_come_from_the_config() -> None:
    read_only = "https://www.googleapis.com/auth/devstorage.read_only"
    config = SkycConfig(gcp=GcpConfig(service_account_scopes=[read_only, CLOUD_PLATFORM]))
    node = _stack(T4, config).resource("node_0")
    assert node.properties["service_account"].values["scopes"] == sorted(
        [read_only, CLOUD_PLATFORM])


@pytest.mark.parametrize("bad", [["cloud-platform"], ["http://example.com/x"], []])
def test_a_scope_that_is_no_oauth_scope_url_is_refused(bad: list[str]) -> None:
    with pytest.raises(ValidationError, match="scope"):
        GcpConfig(service_account_scopes=bad)


def test_account_ids_fit_gcp_rules_and_never_collide() -> None:
    assert names.account_id("train", "1a2b") == "skyc-train-1a2b"
    ids = {names.account_id(n, "1a2b") for n in
           ("a" * 63, "a" * 62, "My_Cluster", "my-cluster", "x", "train")}
    assert len(ids) == 6
    for value in ids:
        assert _ACCOUNT_ID.match(value) and value.endswith("-1a2b"), value
    assert names.account_id("x") == "skyc-x" and _ACCOUNT_ID.match(names.account_id("x"))
