"""Kubernetes's record and parts."""

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


class Kubernetes(Target):
    def lowering(self) -> Lowering:
        from skyc.compiler.kubernetes import lowering

        return lowering

    def errors(self) -> Errors:
        from skyc.compiler.kubernetes import errors

        return errors

    def outputs(self) -> Outputs:
        from skyc.compiler.kubernetes import outputs

        return outputs

    def credentials(self) -> CredentialsModule:
        from skyc.compiler.kubernetes import credentials

        return credentials

    def power(self) -> Power | None:
        return None  # a pod cannot be stopped and resumed

    def own_offers(self) -> OwnOffers:
        from skyc.compiler.kubernetes import offers  # what the contexts' nodes hold

        return offers

    def ssh_proxy(self) -> SshProxy | None:
        return None  # pods are reached through the API server, not SSH

    def storage(self) -> Storage | None:
        return None  # no store of its own: a task placed here names one (store:)


TARGET = Kubernetes(
    "kubernetes",
    # The kubernetes Terraform provider's schema cannot be checked here: Pulumi only.
    engines=("pulumi",),
    capabilities=Capabilities(
        cloud="kubernetes",
        spot=True,
        multi_node=True,
        open_ports=True,
        stop_start=False,
        custom_images=True,
        # Each pod is one resource the engine creates and waits for; beyond a few
        # hundred a single stack's apply gets slow and a JobSet would fit better.
        max_nodes=256,
        controller_credentials=None,  # not yet: an in-cluster service account
        volumes=True,  # PersistentVolumeClaims, existing or made with the cluster
    ),
)
