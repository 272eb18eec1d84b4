"""GCP: one VPC network per cluster; GPU and CPU VMs (A2/A3/A4/G2, and N1 hosts with
attached GPUs) or TPU VMs (single-host slices, or one multi-host slice whose workers
are the nodes). Pulumi only: no google provider can be run here to check Terraform
JSON against, so ``--engine terraform`` is refused for gcp, naming ``--engine pulumi``.
"""

from __future__ import annotations

from typing import Any

from skyc.lazy import lazy_target


def _record() -> Any:
    from skyc.compiler.base import Capabilities, Target

    return Target(
        name="gcp",
        engines=("pulumi",),
        capabilities=Capabilities(
            cloud="gcp",
            spot=True,
            multi_node=True,
            placement_groups=True,   # compact placement policies, where the family has them
            open_ports=True,
            stop_start=True,         # VMs; TPU VMs are created and deleted only
            custom_images=True,
            needs_providers=True,    # the engine fetches the gcp provider plugin
            max_nodes=512,
            controller_credentials=None,  # not yet: a service account on the VM
        ),
    )


__getattr__ = lazy_target(__name__, _record)
