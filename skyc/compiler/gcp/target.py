"""GCP's record and parts."""

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


class Gcp(Target):
    def lowering(self) -> Lowering:
        from skyc.compiler.gcp import lowering

        return lowering

    def errors(self) -> Errors:
        from skyc.compiler.gcp import errors

        return errors

    def outputs(self) -> Outputs:
        from skyc.compiler.gcp import outputs

        return outputs

    def credentials(self) -> CredentialsModule:
        from skyc.compiler.gcp import credentials

        return credentials

    def power(self) -> Power:
        from skyc.compiler.gcp import outputs  # currentStatus of refreshed VMs

        return outputs

    def own_offers(self) -> OwnOffers | None:
        return None  # the bundled price catalog

    def ssh_proxy(self) -> SshProxy | None:
        return None

    def storage(self) -> Storage:
        from skyc.compiler.gcp import storage

        return storage


TARGET = Gcp(
    "gcp",
    # No google provider can be run here to check Terraform JSON against: Pulumi only.
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
