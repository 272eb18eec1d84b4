"""The user's config file, ``$SKYC_HOME/config.yaml`` (``SKYC_HOME`` defaults to ``~/.skyc``).

Every section is optional::

    infra: [aws, gcp, local]          # enabled infra; default: clouds with credentials, plus local
    aws:
      profile: default
      endpoint_url: http://127.0.0.1:5000   # AWS-compatible API (LocalStack, moto, ...)
    r2:
      endpoint_url: https://ACCOUNT.eu.r2.cloudflarestorage.com   # R2's S3 endpoint, when
                                      # not https://ACCOUNT.r2.cloudflarestorage.com (the
                                      # account from ~/.cloudflare/accountid)
    backend:                          # remote Terraform state for teams
      s3: {bucket: my-state, key: skyc, region: us-east-1, dynamodb_table: locks}
    engine: terraform                 # or pulumi; or per target: {aws: pulumi, default: terraform}
    pulumi:
      backend_url: s3://my-state/skyc   # Pulumi state; default file://$SKYC_HOME/pulumi
    ssh_pools:
      lab:
        hosts: [10.0.0.5, 10.0.0.6]
        user: ubuntu
        identity_file: ~/.ssh/id_ed25519
        accelerators: A100:8
    jobs:
      controller: {infra: ssh/lab, resources: {cpus: 4+}}   # default: controllers run here
    provision:
      boot_timeout: 600               # seconds a new node has to accept SSH and finish booting
      keep_network: false             # keep a region's network when its last cluster goes
    gcp:
      project: my-project
      reservations: [my-h200-reservation]   # on-demand offers that need one (a3-ultra, a4)
    state: postgresql://skyc@db.example.com:5432/skyc   # a team's state; default: sqlite
                                      # (SKYC_STATE_URL wins; the password from PGPASSWORD)
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

# The targets' own sections: pydantic models in light modules (a target folder's
# package imports nothing heavy until its record or lowering is asked for).
from skyc.compiler.azure.config import AzureConfig
from skyc.compiler.gcp.config import GcpConfig
from skyc.compiler.kubernetes.config import KubernetesConfig
from skyc.errors import ConfigError

# Re-exported: the config file lies in skyc's home directory.
from skyc.settings.home import config_path as config_path
from skyc.settings.home import skyc_home as skyc_home


class _Model(BaseModel):
    # Validators are built on first validation: a run without a config file builds none.
    model_config = ConfigDict(extra="forbid", defer_build=True)


def _section(model: type[BaseModel]) -> Any:
    """The field of a section left out of the file: the model with its own defaults,
    made without validating them (they are valid as written), so building no validator."""

    def empty() -> BaseModel:
        return model.model_construct()

    return Field(default_factory=empty)


class AwsConfig(_Model):
    profile: str | None = None
    endpoint_url: str | None = None
    # SkyPilot's aws.ssh_proxy_command: SSH to the nodes through a jump host, e.g.
    # "ssh -W %h:%p -i ~/.ssh/jump.pem ec2-user@jump"; one for all regions, or per region
    ssh_proxy_command: str | dict[str, str] | None = None

    @field_validator("ssh_proxy_command")
    @classmethod
    def _proxy_parses(cls, value: str | dict[str, str] | None
                      ) -> str | dict[str, str] | None:
        import shlex

        commands = value.values() if isinstance(value, dict) else [] if value is None else [value]
        for command in commands:
            try:
                words = shlex.split(command)
            except ValueError as exc:
                raise ValueError(f"cannot be split into words ({exc}): {command!r}") from None
            if not words:
                raise ValueError("an empty command; leave the setting out instead")
        return value


class R2Config(_Model):
    # R2's S3 API endpoint: a jurisdiction's (EU, FedRAMP) or an R2-compatible server;
    # None: https://ACCOUNT.r2.cloudflarestorage.com, ACCOUNT from ~/.cloudflare/accountid
    endpoint_url: str | None = None

    def endpoint(self, home: Path) -> str | None:
        """R2's S3 endpoint: ``endpoint_url``, else that of the account in
        ``~/.cloudflare/accountid`` (as SkyPilot keeps it); None: neither is known."""
        if self.endpoint_url:
            return self.endpoint_url
        account = home / ".cloudflare" / "accountid"
        ident = account.read_text().strip() if account.is_file() else ""
        return f"https://{ident}.r2.cloudflarestorage.com" if ident else None


class SshPool(_Model):
    hosts: list[str] = Field(min_length=1)
    user: str | None = None
    port: int = 22
    identity_file: str | None = None
    accelerators: str | dict[str, int] | None = None
    cpus: float | None = None
    memory: float | None = None


EngineName = Literal["terraform", "pulumi"]


class PulumiConfig(_Model):
    backend_url: str | None = None    # file://, s3://, gs://, azblob://, https://api.pulumi.com


class JobsControllerConfig(_Model):
    """Where managed jobs' controller runs: a cluster skyc provisions (skyc.jobs.remote)."""

    infra: str = Field(min_length=1)          # as a task's resources.infra: local, ssh/lab, aws
    resources: dict[str, Any] = Field(default_factory=dict)  # a task's resources keys


class JobsConfig(_Model):
    controller: JobsControllerConfig | None = None  # None: on this machine


DEFAULT_BOOT_TIMEOUT = 600.0


class ProvisionConfig(_Model):
    """How long a new node has, from apply to accepting SSH with its bootstrap done."""

    boot_timeout: float = Field(default=DEFAULT_BOOT_TIMEOUT, gt=0, le=86400)
    # Keep a region's shared network (AWS's VPC) when the last cluster using it goes.
    keep_network: bool = False


# Backend settings that hold a secret (access_key, secret_key, token, sas_token,
# client_secret, GCS's credentials, a password); not switches such as the S3 backend's
# skip_credentials_validation, nor paths such as shared_credentials_files.
_SECRET_KEY = re.compile(r"secret|password|token|access_key|^credentials$|^sas|"
                         r"encryption_key|conn_str", re.I)


def _secret_paths(settings: Any, where: str) -> list[str]:
    """The dotted names of ``settings`` (nested blocks too) that hold a secret."""
    if isinstance(settings, list):
        return [p for item in settings for p in _secret_paths(item, where)]
    if not isinstance(settings, dict):
        return []
    found = []
    for key, value in settings.items():
        path = f"{where}.{key}"
        if (isinstance(key, str) and _SECRET_KEY.search(key)
                and not key.endswith(("_file", "_files", "_path"))):  # where one is kept
            found.append(path)
        found += _secret_paths(value, path)
    return found


class SkycConfig(_Model):
    infra: list[str] | None = None
    aws: AwsConfig = _section(AwsConfig)
    r2: R2Config = _section(R2Config)
    backend: dict[str, dict[str, Any]] | None = None

    @field_validator("backend")
    @classmethod
    def _no_secrets_in_backend(
        cls, value: dict[str, dict[str, Any]] | None
    ) -> dict[str, dict[str, Any]] | None:
        # The backend block is written into every stack, which is made for review:
        # credentials must come from the engine's environment instead.
        for kind, settings in (value or {}).items():
            for path in _secret_paths(settings, f"backend.{kind}"):
                raise ValueError(
                    f"{path}: credentials would be written into every stack; set them "
                    "in the environment (e.g. AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, "
                    "ARM_ACCESS_KEY) instead"
                )
        return value
    ssh_pools: dict[str, SshPool] = Field(default_factory=dict)
    engine: EngineName | dict[str, EngineName] | None = None
    pulumi: PulumiConfig = _section(PulumiConfig)
    policy: str | None = None  # a policy file's path (skyc.review.policy)
    state: str | None = None  # "sqlite" (the default) or postgresql://... (skyc.settings.state_url)

    @field_validator("state")
    @classmethod
    def _state_url(cls, value: str | None) -> str | None:
        if value is not None:
            from skyc.settings.state_url import check_setting

            try:
                check_setting(value, "state")
            except ConfigError as exc:  # the message names the URL without its password
                raise ValueError(f"{exc.message.removeprefix('state: ')}; {exc.hint}"
                                 ) from None
        return value

    def engine_for(self, target: str) -> tuple[str | None, str | None]:
        """(the engine the config names for ``target``, the config-wide default)."""
        if isinstance(self.engine, dict):
            return self.engine.get(target), self.engine.get("default")
        return None, self.engine
    kubernetes: KubernetesConfig = _section(KubernetesConfig)
    azure: AzureConfig = _section(AzureConfig)
    gcp: GcpConfig = _section(GcpConfig)
    jobs: JobsConfig = _section(JobsConfig)
    provision: ProvisionConfig = _section(ProvisionConfig)
    # Who the clusters this config creates belong to (default user@host): recorded with a
    # cluster when it is created, and hashed into its names on the cloud.
    user: str | None = Field(default=None, min_length=1, max_length=128,
                             pattern=r"^[A-Za-z0-9._@+-]+$")


def load_config(path: Path | None = None) -> SkycConfig:
    """Read the config file (a regular file of at most 8 MiB, bounded YAML); a missing
    file is an empty config."""
    path = path or config_path()
    if not path.exists():
        return SkycConfig.model_construct()  # every default, with no validator built
    from skyc.task.documents import load_yaml
    from skyc.task.inputs import CONFIG

    data = load_yaml(path, str(path), CONFIG) or {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    try:
        return SkycConfig.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
        )
        raise ConfigError(
            f"{path}: {problems}", hint="see the config format in skyc/settings/config.py"
        ) from None

