"""Azure: NVIDIA ND/NC/NV and AMD ND MI300X virtual machines (engine: Pulumi azure-native).

One resource group per cluster (see ``lowering``). Azure-native is Pulumi's own
provider, generated from Azure's REST specifications and not bridged from
Terraform, so its resources have no azurerm counterpart to emit or check here:
the target is Pulumi-only, and ``--engine terraform`` is refused.
"""

from __future__ import annotations

from typing import Any

from skyc.lazy import lazy_target


def _record() -> Any:
    from skyc.compiler.base import Capabilities, Target

    return Target(
        name="azure",
        engines=("pulumi",),
        capabilities=Capabilities(
            cloud="azure",
            spot=True,
            multi_node=True,
            placement_groups=True,
            open_ports=True,
            # No power handling yet: a stopped Azure VM must be deallocated (a guest
            # shutdown leaves it "Stopped (allocated)" and billed in full), so stop and
            # autostop-stop are refused and autostop tears the cluster down instead.
            stop_start=False,
            custom_images=True,
            needs_providers=True,
            max_nodes=200,  # an availability set (one InfiniBand fabric) holds at most 200 VMs
            controller_credentials=None,  # not yet: a managed identity
        ),
    )


__getattr__ = lazy_target(__name__, _record)
