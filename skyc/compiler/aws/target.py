"""AWS's record and parts."""

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


class Aws(Target):
    def lowering(self) -> Lowering:
        from skyc.compiler.aws import lowering

        return lowering

    def errors(self) -> Errors:
        from skyc.compiler.aws import errors

        return errors

    def outputs(self) -> Outputs:
        from skyc.compiler.aws import outputs

        return outputs

    def credentials(self) -> CredentialsModule:
        from skyc.compiler.aws import credentials

        return credentials

    def power(self) -> Power:
        from skyc.compiler.aws import outputs  # instance_state of refreshed instances

        return outputs

    def own_offers(self) -> OwnOffers | None:
        return None  # the bundled price catalog

    def ssh_proxy(self) -> SshProxy:
        from skyc.compiler.aws import outputs  # aws.ssh_proxy_command

        return outputs

    def storage(self) -> Storage:
        from skyc.compiler.aws import storage

        return storage


TARGET = Aws(
    "aws",
    engines=("terraform", "pulumi"),
    capabilities=Capabilities(
        cloud="aws",
        spot=True,
        multi_node=True,
        placement_groups=True,
        open_ports=True,
        stop_start=True,
        disk_gb_month=0.08,  # gp3, us-east-1: what a stopped node still costs per GB
        custom_images=True,
        needs_providers=True,
        max_nodes=512,  # one cluster placement group holds at most a few hundred instances
        controller_credentials="instance-role",  # an IAM role and instance profile
    ),
)
