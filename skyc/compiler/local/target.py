"""This machine: the record and parts."""

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


class Local(Target):
    def lowering(self) -> Lowering:
        from skyc.compiler.local import lowering

        return lowering

    def errors(self) -> Errors:
        from skyc.compiler.local import errors

        return errors

    def outputs(self) -> Outputs:
        from skyc.compiler.local import outputs

        return outputs

    def credentials(self) -> CredentialsModule:
        from skyc.compiler.local import credentials

        return credentials

    def power(self) -> Power | None:
        return None

    def own_offers(self) -> OwnOffers | None:
        return None  # this machine's offer is the catalog's (skyc.catalog.local_offers)

    def ssh_proxy(self) -> SshProxy | None:
        return None

    def storage(self) -> Storage | None:
        return None  # no store of its own: a task placed here names one (store:)


TARGET = Local(
    "local",
    # Its nodes are local commands run by the engine, which Pulumi's SDK alone cannot run.
    engines=("terraform",),
    # Local nodes are process trees on this machine: a few dozen at most is useful.
    capabilities=Capabilities(cloud="local", multi_node=True, open_ports=True, max_nodes=64),
    bought=False,
)
