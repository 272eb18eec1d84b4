"""Azure's record and parts."""

from __future__ import annotations

from skyc.compiler.contract import (
    Capabilities,
    CredentialsModule,
    Errors,
    Lowering,
    Outputs,
    OwnOffers,
    Power,
    SshProxy,
    Storage,
    Target,
)


class Azure(Target):
    def lowering(self) -> Lowering:
        from skyc.compiler.azure import lowering

        return lowering

    def errors(self) -> Errors:
        from skyc.compiler.azure import errors

        return errors

    def outputs(self) -> Outputs:
        from skyc.compiler.azure import outputs

        return outputs

    def credentials(self) -> CredentialsModule:
        from skyc.compiler.azure import credentials

        return credentials

    def power(self) -> Power | None:
        return None  # no deallocation yet: see stop_start below

    def own_offers(self) -> OwnOffers | None:
        return None  # the bundled price catalog

    def ssh_proxy(self) -> SshProxy | None:
        return None

    def storage(self) -> Storage | None:
        from skyc.compiler.azure import storage

        return storage


TARGET = Azure(
    "azure",
    # azure-native is Pulumi's own provider (no azurerm counterpart): Pulumi only.
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
