"""Finding the Azure login and subscription from files and variables (no network).

The Azure CLI cannot log in here, so its files are written in the shapes it
writes: azureProfile.json with a UTF-8 byte-order mark, and an MSAL token cache
whose content skyc never reads.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from skyc.compiler.azure.config import AzureConfig
from skyc.compiler.azure.credentials import AzureCredentials, find

SUB = "11111111-2222-3333-4444-555555555555"
OTHER = "99999999-8888-7777-6666-555555555555"
TENANT = "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"
SECRET = "s3cret-value-never-stored"


def _cli_login(home: Path, *, default: bool = True, cache: bool = True,
               state: str = "Enabled") -> Path:
    directory = home / ".azure"
    directory.mkdir(parents=True, exist_ok=True)
    profile = {"installationId": "x", "subscriptions": [
        {"id": OTHER, "name": "other", "state": "Enabled", "isDefault": False,
         "tenantId": TENANT, "user": {"name": "me@example.com", "type": "user"}},
        {"id": SUB.upper(), "name": "research", "state": state, "isDefault": default,
         "tenantId": TENANT, "user": {"name": "me@example.com", "type": "user"}},
    ]}
    (directory / "azureProfile.json").write_text(json.dumps(profile), encoding="utf-8-sig")
    if cache:
        (directory / "msal_token_cache.json").write_text(json.dumps({"AccessToken": {
            "k": {"secret": SECRET}}}))
    return directory


def _no_secret(found: AzureCredentials) -> None:
    assert SECRET not in repr(found)


def test_cli_login_with_its_default_subscription(tmp_path: Path) -> None:
    _cli_login(tmp_path)
    found = find(env={}, home=tmp_path)
    assert found.ok and found.method == "azure-cli"
    assert found.subscription_id == SUB and found.tenant_id == TENANT
    assert "research" in found.reason and "msal_token_cache.json" in found.reason
    _no_secret(found)


def test_config_subscription_wins_over_env_and_cli(tmp_path: Path) -> None:
    _cli_login(tmp_path)
    env = {"AZURE_SUBSCRIPTION_ID": OTHER}
    found = find(AzureConfig(subscription_id=SUB), env=env, home=tmp_path)
    assert found.subscription_id == SUB and "config" in found.reason
    found = find(AzureConfig(), env=env, home=tmp_path)
    assert found.subscription_id == OTHER and "AZURE_SUBSCRIPTION_ID" in found.reason


def test_azure_config_dir_is_honoured(tmp_path: Path) -> None:
    directory = _cli_login(tmp_path / "elsewhere")
    found = find(env={"AZURE_CONFIG_DIR": str(directory)}, home=tmp_path)
    assert found.ok and str(directory) in found.reason


def test_no_login_says_how_to_log_in(tmp_path: Path) -> None:
    found = find(env={}, home=tmp_path)
    assert not found.ok and found.hint and "az login" in found.hint


def test_a_profile_without_a_token_cache_is_no_login(tmp_path: Path) -> None:
    _cli_login(tmp_path, cache=False)
    found = find(env={}, home=tmp_path)
    assert not found.ok and "token cache" in found.reason


def test_no_default_subscription(tmp_path: Path) -> None:
    _cli_login(tmp_path, default=False)
    found = find(env={}, home=tmp_path)
    assert not found.ok and found.hint and "az account set" in found.hint
    assert find(AzureConfig(subscription_id=SUB), env={}, home=tmp_path).ok


def test_a_disabled_default_subscription(tmp_path: Path) -> None:
    _cli_login(tmp_path, state="Disabled")
    found = find(env={}, home=tmp_path)
    assert not found.ok and "Disabled" in found.reason


def test_an_unreadable_profile_is_a_reason_not_a_traceback(tmp_path: Path) -> None:
    (tmp_path / ".azure").mkdir()
    (tmp_path / ".azure" / "azureProfile.json").write_text("{not json")
    found = find(env={}, home=tmp_path)
    assert not found.ok and "unreadable" in found.reason


def test_service_principal(tmp_path: Path) -> None:
    env = {"AZURE_CLIENT_ID": "app", "AZURE_TENANT_ID": TENANT, "AZURE_CLIENT_SECRET": SECRET,
           "AZURE_SUBSCRIPTION_ID": SUB}
    found = find(env=env, home=tmp_path)
    assert found.ok and found.method == "service-principal"
    assert found.subscription_id == SUB and found.tenant_id == TENANT
    assert "AZURE_CLIENT_SECRET" in found.reason
    _no_secret(found)


def test_service_principal_needs_a_subscription(tmp_path: Path) -> None:
    _cli_login(tmp_path)  # the CLI's default is not used for a service principal
    env = {"AZURE_CLIENT_ID": "app", "AZURE_TENANT_ID": TENANT, "AZURE_CLIENT_SECRET": SECRET}
    found = find(env=env, home=tmp_path)
    assert not found.ok and found.hint and "AZURE_SUBSCRIPTION_ID" in found.hint
    _no_secret(found)


@pytest.mark.parametrize("missing", ["AZURE_TENANT_ID", "AZURE_CLIENT_SECRET"])
def test_an_incomplete_service_principal_names_what_is_missing(tmp_path: Path,
                                                                missing: str) -> None:
    env = {"AZURE_CLIENT_ID": "app", "AZURE_TENANT_ID": TENANT, "AZURE_CLIENT_SECRET": SECRET,
           "AZURE_SUBSCRIPTION_ID": SUB}
    del env[missing]
    found = find(env=env, home=tmp_path)
    assert not found.ok and missing in found.reason
    _no_secret(found)


def test_a_malformed_subscription_variable(tmp_path: Path) -> None:
    _cli_login(tmp_path)
    found = find(env={"AZURE_SUBSCRIPTION_ID": "my-sub"}, home=tmp_path)
    assert not found.ok and "AZURE_SUBSCRIPTION_ID" in found.reason


def test_config_model_checks_the_subscription_id() -> None:
    assert AzureConfig(subscription_id=f" {SUB.upper()} ").subscription_id == SUB
    with pytest.raises(ValidationError, match="not a subscription id"):
        AzureConfig(subscription_id="research")
    with pytest.raises(ValidationError):
        AzureConfig.model_validate({"subscription_id": SUB, "client_secret": "x"})


def test_the_config_file_carries_the_azure_section(tmp_path: Path) -> None:
    from skyc.errors import ConfigError
    from skyc.settings.config import load_config

    path = tmp_path / "config.yaml"
    path.write_text(f"azure:\n  subscription_id: {SUB}\n")
    assert find(load_config(path).azure, env={}, home=tmp_path).reason.startswith(
        "no Azure login")
    _cli_login(tmp_path)
    found = find(load_config(path).azure, env={}, home=tmp_path)
    assert found.subscription_id == SUB and "config" in found.reason
    path.write_text("azure:\n  subscription_id: research\n")
    with pytest.raises(ConfigError, match=r"azure\.subscription_id"):
        load_config(path)


def test_the_registry_passes_the_whole_config(tmp_path: Path) -> None:
    from skyc.compiler import credentials
    from skyc.settings.config import SkycConfig

    _cli_login(tmp_path)
    config = SkycConfig.model_validate({"azure": {"subscription_id": SUB}})
    found = credentials("azure", {}, tmp_path, config)
    assert found.ok and SUB in found.reason and "azure.subscription_id" in found.reason
    assert credentials("azure", {}, tmp_path).ok  # the CLI's default subscription
