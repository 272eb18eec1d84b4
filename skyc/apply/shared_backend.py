"""When the state is a team's (PostgreSQL), a cluster on a cloud or Kubernetes is
everyone's: its stack's state must live where every teammate's engine finds it (a
remote backend), not in the launching machine's workspace. Refused before anything is
created, with the setting that fixes it. Machines skyc is given (``local``, ``ssh``)
belong to the machine that launched them and need none."""

from __future__ import annotations

from skyc.compiler import target
from skyc.errors import ConfigError
from skyc.settings.config import SkycConfig
from skyc.settings.state_url import redacted_url, state_url

TERRAFORM_FIX = ("set backend: in the config, e.g. {s3: {bucket: team-state, key: skyc, "
                 "region: us-east-1, dynamodb_table: locks}} (or gcs, azurerm)")
PULUMI_FIX = ("set pulumi.backend_url in the config, e.g. s3://team-state/skyc (or gs://, "
              "azblob://, https://api.pulumi.com)")


def backend_problem(cloud: str, engine: str, config: SkycConfig) -> str | None:
    """Why cluster stacks on ``cloud`` driven by ``engine`` cannot be shared (None: they
    can, or need not be)."""
    url = state_url()
    if url is None or not target(cloud).bought:
        return None
    if engine == "pulumi":
        backend = config.pulumi.backend_url or ""
        if backend and not backend.startswith("file://"):
            return None
        where = f"Pulumi's {'file' if backend else 'default local'} backend"
    else:
        kinds = set(config.backend or {})
        if kinds and "local" not in kinds:
            return None
        where = "terraform's local backend"
    return (f"the state is shared ({redacted_url(url)}), but the stack of a {cloud} "
            f"cluster would keep its own state in {where} on this machine, where "
            "teammates cannot reach it")


def check_shared_backend(cloud: str, engine: str, config: SkycConfig) -> None:
    problem = backend_problem(cloud, engine, config)
    if problem is not None:
        raise ConfigError(problem, hint=PULUMI_FIX if engine == "pulumi" else TERRAFORM_FIX)
