"""Azure: NVIDIA ND/NC/NV and AMD ND MI300X virtual machines (engine: Pulumi azure-native).

One resource group per cluster (see ``lowering``). Azure-native is Pulumi's own
provider, generated from Azure's REST specifications and not bridged from
Terraform, so its resources have no azurerm counterpart to emit or check here:
the target is Pulumi-only, and ``--engine terraform`` is refused.

The record and its parts are in ``target``.
"""
