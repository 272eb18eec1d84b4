"""Quota errors through the failover loop: each blocks where its quota counts, and the
next placement comes from there on.

The loop, the classifiers and the optimizer (over the bundled catalog, with the
blocked places) are the real ones; only the provisioning step is a stand-in, as in
test_failover_loop.py: it raises what the cloud's classifier makes of the cloud's
error text (no AWS, GCP or Azure account can be reached from here; the AWS case
also runs end to end on terraform + moto in test_failover_quota_aws.py).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from skyc.apply.failover import provision_with_failover
from skyc.catalog import load_catalog
from skyc.compiler import classify_error
from skyc.errors import ProvisionError
from skyc.model.diagnostics import Diagnostic
from skyc.model.plan import Placement
from skyc.optimizer import optimize
from skyc.optimizer.blocked import Blocked
from tests.optimizer.helpers import make_task


def _a100(cloud: str) -> dict[str, object]:
    return {"accelerator": {"name": "A100", "count": 8}, "infra": {"cloud": cloud}}


def _planner(*clouds: str) -> tuple[Callable[[list[Blocked]], Placement], list[list[Blocked]]]:
    task = make_task({"candidates": [_a100(c) for c in clouds]})
    catalog = load_catalog()
    asked: list[list[Blocked]] = []

    def next_placement(blocked: list[Blocked]) -> Placement:
        asked.append(list(blocked))
        return optimize([task], catalog, blocked=blocked).tasks[0].placement

    return next_placement, asked


def _aws(code: str, message: str, action: str = "CreateVpc") -> str:
    return (f"creating EC2 VPC: operation error EC2: {action}, https response error "
            f"StatusCode: 400, RequestID: 1f0e, api error {code}: {message}")


# case -> (the error text, the code it classifies as, the clouds the task may use (the
# first is the cheapest), what is blocked after it)
CASES: dict[str, tuple[str, str, tuple[str, ...], str]] = {
    "aws-vpc": (_aws("VpcLimitExceeded", "The maximum number of VPCs has been reached."),
                "VpcLimitExceeded", ("aws",), "region"),
    "aws-elastic-ip": (_aws("AddressLimitExceeded", "The maximum number of addresses has "
                            "been reached.", "AllocateAddress"),
                       "AddressLimitExceeded", ("aws",), "region"),
    "aws-iam": ("creating IAM Role (skyc-x): operation error IAM: CreateRole, https response "
                "error StatusCode: 409, RequestID: 1f0e, api error LimitExceeded: Cannot exceed "
                "quota for RolesPerAccount: 1000", "LimitExceeded", ("aws", "azure"), "cloud"),
    "gcp-networks": ("Error waiting to create Network: Error waiting for Creating Network: "
                     "Quota 'NETWORKS' exceeded.  Limit: 15.0 globally.\n\tmetric name = "
                     "compute.googleapis.com/networks\n\tdimensions = map[global:global]",
                     "QUOTA_EXCEEDED", ("gcp", "aws"), "cloud"),
    "azure-public-ip": ('Status=400 Code="PublicIPCountLimitReached" Message="Cannot create '
                        'more than 10 public IP addresses for this subscription in this '
                        'region." Details=[]', "PublicIPCountLimitReached", ("azure",),
                        "region"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_quota_error_moves_past_where_the_quota_counts(case: str) -> None:
    text, code, clouds, scope = CASES[case]
    next_placement, asked = _planner(*clouds)
    first = next_placement([])
    assert first.cloud == clouds[0]
    tried: list[Placement] = []
    cleaned: list[Placement] = []

    def provision(p: Placement) -> str:
        tried.append(p)
        if p == first:
            error = classify_error(p.cloud, [Diagnostic(engine="terraform", summary=text,
                                                        address="network")], placement=p)
            assert isinstance(error, ProvisionError), text
            raise error
        return f"up in {p.infra}"

    result = provision_with_failover(first, provision=provision, cleanup=cleaned.append,
                                     next_placement=next_placement, sleep=lambda _: None)

    assert [a.error for a in result.attempts] == [code, None]
    assert cleaned == [first]  # what the attempt created is destroyed before moving on
    nxt = tried[1]
    blocked = (Blocked(cloud=first.cloud) if scope == "cloud"
               else Blocked(cloud=first.cloud, region=first.region))
    assert asked[1:] == [[blocked]]
    if scope == "cloud":
        assert nxt.cloud != first.cloud
    else:
        assert nxt.cloud == first.cloud and nxt.region != first.region
    assert result.value == f"up in {nxt.infra}"


def test_a_vpc_quota_passes_over_the_regions_other_zones() -> None:
    """The zone-scoped capacity error would stay in the region (it has another zone
    with the type); the VPC quota does not."""
    next_placement, _ = _planner("aws")
    first = next_placement([])
    sibling = next_placement([Blocked(cloud="aws", region=first.region, zone=first.zone)])
    assert sibling.region == first.region and sibling.zone != first.zone

    def provision(p: Placement) -> str:
        if p.region == first.region:
            error = classify_error("aws", [Diagnostic(engine="terraform", summary=CASES[
                "aws-vpc"][0], address="aws_vpc.main")], placement=p)
            assert error is not None
            raise error
        return p.region or ""

    result = provision_with_failover(first, provision=provision, cleanup=lambda p: None,
                                     next_placement=next_placement)
    assert [a.placement.region for a in result.attempts] == [first.region, result.value]
    assert result.value != first.region
    assert "quota 'VPCs per Region'" in result.attempts[0].message
