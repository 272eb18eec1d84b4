"""What the targets declare of stopping nodes is what their stacks can do: Azure has no
power handling (a guest shutdown would leave its VMs allocated and billed), so stop and
autostop-stop are refused there and autostop with down is offered."""

from __future__ import annotations

import pytest

from skyc.apply.preflight import check_target_autostop
from skyc.compiler import target
from skyc.errors import UnsupportedFeature


def test_azure_declares_no_stop_and_autostop_stop_is_refused_naming_down() -> None:
    assert target("azure").capabilities.stop_start is False
    with pytest.raises(UnsupportedFeature) as info:
        check_target_autostop("c", "azure", down=False)
    assert "cannot be stopped, only torn down" in info.value.message
    assert "--down" in (info.value.hint or "")


@pytest.mark.parametrize("cloud", ["aws", "gcp"])
def test_clouds_with_power_handling_declare_it(cloud: str) -> None:
    assert target(cloud).capabilities.stop_start is True


def test_gcp_reads_stopped_vms_back_from_a_refresh() -> None:
    """GCP declares stop/start, so `status --refresh` must tell a stopped VM from a
    running one: its ``power`` part reads the status GCP reports (Pulumi's
    ``currentStatus``, terraform's ``current_status``)."""
    from skyc.apply.reconcile import power_states
    from skyc.stacks.engine import RefreshedResource

    vm = "gcp:compute/instance:Instance"
    resources = [
        RefreshedResource(address="urn:a", type=vm, values={"currentStatus": "TERMINATED"}),
        RefreshedResource(address="urn:b", type=vm, values={"currentStatus": "RUNNING"}),
        RefreshedResource(address="c", type="google_compute_instance",
                          values={"current_status": "STOPPING"}),
        RefreshedResource(address="urn:net", type="gcp:compute/network:Network",
                          values={"name": "n"}),
    ]
    assert power_states("gcp", resources) == (("c", "urn:a"), ("urn:b",))
