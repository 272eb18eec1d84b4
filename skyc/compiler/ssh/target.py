"""SSH pools: the record and parts."""

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


class Ssh(Target):
    def lowering(self) -> Lowering:
        from skyc.compiler.ssh import lowering

        return lowering

    def errors(self) -> Errors:
        from skyc.compiler.ssh import errors

        return errors

    def outputs(self) -> Outputs:
        from skyc.compiler.ssh import outputs

        return outputs

    def credentials(self) -> CredentialsModule:
        from skyc.compiler.ssh import credentials

        return credentials

    def power(self) -> Power | None:
        return None  # existing machines: skyc does not own their power

    def own_offers(self) -> OwnOffers | None:
        return None  # a pool's hosts are the catalog's (skyc.catalog.ssh_offers)

    def ssh_proxy(self) -> SshProxy | None:
        return None  # a pool's hosts say how they are reached in the config

    def storage(self) -> Storage | None:
        return None  # no store of its own: a task placed here names one (store:)


TARGET = Ssh(
    "ssh",
    engines=("terraform",),
    # A pool's size bounds a cluster anyway (the optimizer sees one offer per host).
    capabilities=Capabilities(cloud="ssh", multi_node=True, creates_resources=False,
                              max_nodes=1024),
    bought=False,
)
