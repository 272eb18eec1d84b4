"""Azure: NVIDIA ND/NC/NV and AMD ND MI300X virtual machines (engine: Pulumi azure-native).

One resource group per cluster (see ``lowering``). Azure-native is Pulumi's own
provider, generated from Azure's REST specifications and not bridged from
Terraform, so its resources have no azurerm counterpart to emit or check here:
the target is Pulumi-only, and ``--engine terraform`` is refused.
"""

from __future__ import annotations

from typing import Any


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
            stop_start=True,
            custom_images=True,
            needs_providers=True,
            max_nodes=200,  # an availability set (one InfiniBand fabric) holds at most 200 VMs
            controller_credentials=None,  # not yet: a managed identity
        ),
    )


def __getattr__(name: str) -> Any:
    """``TARGET``, made on first use: the config module imports this package's
    ``config``, and the compiler's base module loads only when a record is asked for."""
    if name == "TARGET":
        globals()["TARGET"] = record = _record()
        return record
    raise AttributeError(name)
