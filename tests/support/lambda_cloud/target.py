"""The extra target's record and parts."""

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


class LambdaCloud(Target):
    def lowering(self) -> Lowering:
        from tests.support.lambda_cloud import lowering

        return lowering

    def errors(self) -> Errors:
        from tests.support.lambda_cloud import errors

        return errors

    def outputs(self) -> Outputs:
        from tests.support.lambda_cloud import outputs

        return outputs

    def credentials(self) -> CredentialsModule:
        from tests.support.lambda_cloud import credentials

        return credentials

    def power(self) -> Power | None:
        return None

    def own_offers(self) -> OwnOffers:
        from tests.support.lambda_cloud import offers

        return offers

    def ssh_proxy(self) -> SshProxy | None:
        return None

    def storage(self) -> Storage | None:
        return None


TARGET = LambdaCloud(
    "lambda",
    engines=("terraform",),
    capabilities=Capabilities(cloud="lambda", multi_node=True, max_nodes=4),
)
