"""Which Azure login skyc would provision with, found by cheap local checks only.

Two ways to sign in, in the order the Azure SDKs' default credential tries them:

- a service principal: ``AZURE_CLIENT_ID`` and ``AZURE_TENANT_ID`` with one of
  ``AZURE_CLIENT_SECRET``, ``AZURE_CLIENT_CERTIFICATE_PATH`` or
  ``AZURE_FEDERATED_TOKEN_FILE`` (workload identity);
- the Azure CLI's login (``az login``): ``azureProfile.json`` and the MSAL token
  cache in ``$AZURE_CONFIG_DIR`` (default ``~/.azure``).

The subscription comes from ``azure.subscription_id`` in the config, else
``AZURE_SUBSCRIPTION_ID`` (or ``ARM_SUBSCRIPTION_ID``), else the CLI's default
subscription in ``azureProfile.json``.

Nothing secret is read: a secret variable is checked for presence only, the
token cache only for existence, and ``azureProfile.json`` holds ids and names,
no tokens. Nothing here calls the network.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from skyc.compiler.azure.config import AzureConfig, is_subscription_id

if TYPE_CHECKING:
    from skyc.settings.config import SkycConfig

Method = Literal["service-principal", "azure-cli"]

_SECRET_VARS = ("AZURE_CLIENT_SECRET", "AZURE_CLIENT_CERTIFICATE_PATH",
                "AZURE_FEDERATED_TOKEN_FILE")
_SUBSCRIPTION_VARS = ("AZURE_SUBSCRIPTION_ID", "ARM_SUBSCRIPTION_ID")
_TOKEN_CACHES = ("msal_token_cache.json", "msal_token_cache.bin", "accessTokens.json")

LOGIN_HELP = ("run `az login`, or set AZURE_CLIENT_ID, AZURE_TENANT_ID and "
              "AZURE_CLIENT_SECRET for a service principal")


class AzureCredentials(NamedTuple):
    """What was found: the login, the subscription, and in words how they were found.

    ``ok`` is False when skyc could not provision from here; ``reason`` then says
    why and ``hint`` what to do. No field ever holds a secret.
    """

    ok: bool
    reason: str
    method: Method | None = None
    subscription_id: str | None = None
    tenant_id: str | None = None
    hint: str | None = None


def config_dir(env: Mapping[str, str], home: Path) -> Path:
    """The Azure CLI's configuration directory."""
    explicit = env.get("AZURE_CONFIG_DIR")
    return Path(explicit).expanduser() if explicit else home / ".azure"


def _profile(directory: Path) -> tuple[dict[str, Any] | None, str | None]:
    """The CLI's azureProfile.json (written with a byte-order mark), or why not."""
    path = directory / "azureProfile.json"
    if not path.is_file():
        return None, None
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return None, f"{path} is unreadable ({type(exc).__name__}): run `az login` again"
    if not isinstance(data, dict):
        return None, f"{path} does not hold a profile: run `az login` again"
    return data, None


def _default_subscription(profile: dict[str, Any]) -> dict[str, Any] | None:
    subs = profile.get("subscriptions")
    if not isinstance(subs, list):
        return None
    for sub in subs:
        if isinstance(sub, dict) and sub.get("isDefault") and isinstance(sub.get("id"), str):
            return sub
    return None


def _subscription(config: AzureConfig | None,
                  env: Mapping[str, str]) -> tuple[str | None, str | None, str | None]:
    """(subscription id, where it came from, problem) from the config or the environment."""
    if config is not None and config.subscription_id:
        return config.subscription_id, "azure.subscription_id in the config", None
    for var in _SUBSCRIPTION_VARS:
        value = env.get(var, "").strip()
        if value:
            if not is_subscription_id(value):
                return None, None, f"{var} is not a subscription id (a GUID)"
            return value.lower(), var, None
    return None, None, None


def credentials(env: Mapping[str, str], home: Path,
                config: SkycConfig | None = None) -> AzureCredentials:
    """The login and subscription found (the subscription of ``config.azure`` first)."""
    return find(config.azure if config is not None else None, env, home)


def find(config: AzureConfig | None = None, env: Mapping[str, str] | None = None,
         home: Path | None = None) -> AzureCredentials:
    """The Azure login and subscription skyc would use, or why there is none."""
    env = os.environ if env is None else env
    home = Path(env.get("HOME") or Path.home()) if home is None else home
    sub_id, sub_from, sub_problem = _subscription(config, env)
    if sub_problem:
        return AzureCredentials(False, sub_problem, hint="set it to a subscription id from "
                                "`az account list`, or unset it")
    if env.get("AZURE_CLIENT_ID") or env.get("AZURE_TENANT_ID"):
        return _service_principal(env, sub_id, sub_from)
    return _cli_login(config_dir(env, home), sub_id, sub_from)


def _service_principal(env: Mapping[str, str], sub_id: str | None,
                       sub_from: str | None) -> AzureCredentials:
    missing = [v for v in ("AZURE_CLIENT_ID", "AZURE_TENANT_ID") if not env.get(v)]
    secret = next((v for v in _SECRET_VARS if env.get(v)), None)
    if missing or secret is None:
        need = missing + ([] if secret else [" or ".join(_SECRET_VARS)])
        return AzureCredentials(False, f"service principal incomplete: {', '.join(need)} "
                                "not set", hint="set all three, or unset AZURE_CLIENT_ID and "
                                "AZURE_TENANT_ID to use the Azure CLI's login")
    tenant = env["AZURE_TENANT_ID"]
    if sub_id is None:
        return AzureCredentials(False, f"service principal found ({secret} is set) but no "
                                "subscription", method="service-principal", tenant_id=tenant,
                                hint="set azure.subscription_id in the config or "
                                "AZURE_SUBSCRIPTION_ID")
    return AzureCredentials(True, f"service principal (AZURE_CLIENT_ID, {secret}); "
                            f"subscription {sub_id} from {sub_from}",
                            method="service-principal", subscription_id=sub_id,
                            tenant_id=tenant)


def _cli_login(directory: Path, sub_id: str | None, sub_from: str | None) -> AzureCredentials:
    profile, problem = _profile(directory)
    if problem:
        return AzureCredentials(False, problem, hint=LOGIN_HELP)
    caches = [name for name in _TOKEN_CACHES if (directory / name).is_file()]
    if profile is None or not caches:
        what = "azureProfile.json" if profile is None else "a token cache"
        return AzureCredentials(False, f"no Azure login found (no {what} in {directory})",
                                hint=LOGIN_HELP)
    default = _default_subscription(profile)
    if sub_id is None and default is None:
        return AzureCredentials(False, f"Azure CLI login found in {directory} but no default "
                                "subscription", method="azure-cli",
                                hint="run `az account set --subscription <id>`, or set "
                                "azure.subscription_id in the config")
    if sub_id is None and default is not None:
        sub_id = str(default["id"]).lower()
        name = default.get("name")
        sub_from = "the Azure CLI's default" + (f" ({name})" if isinstance(name, str) else "")
        if default.get("state", "Enabled") != "Enabled":
            return AzureCredentials(False, f"the Azure CLI's default subscription {sub_id} is "
                                    f"{default.get('state')}", method="azure-cli",
                                    hint="run `az account set --subscription <id>` with an "
                                    "enabled subscription")
    tenant = default.get("tenantId") if default else None
    return AzureCredentials(True, f"Azure CLI login ({directory / caches[0]}); subscription "
                            f"{sub_id} from {sub_from}", method="azure-cli",
                            subscription_id=sub_id,
                            tenant_id=tenant if isinstance(tenant, str) else None)
