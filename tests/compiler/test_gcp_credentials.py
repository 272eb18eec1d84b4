"""GCP credentials and project discovery: real files in a temporary home, no network."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from skyc.compiler.gcp.config import GcpConfig
from skyc.compiler.gcp.credentials import credentials
from skyc.settings.config import SkycConfig

SECRET = ("-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcw\n"
          "-----END PRIVATE KEY-----\n")
REFRESH = "1//0gSECRETREFRESHTOKEN"


def _adc(home: Path, data: dict[str, object]) -> Path:
    path = home / ".config" / "gcloud" / "application_default_credentials.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def _user(project: str | None = "quota-proj-1") -> dict[str, object]:
    data: dict[str, object] = {"type": "authorized_user",
                               "client_id": "x.apps.googleusercontent.com",
                               "client_secret": "d-SECRET", "refresh_token": REFRESH}
    if project:
        data["quota_project_id"] = project
    return data


def _key(project: str = "key-project-1") -> dict[str, object]:
    return {"type": "service_account", "project_id": project, "private_key_id": "abc",
            "private_key": SECRET, "client_email": f"sa@{project}.iam.gserviceaccount.com"}


def _no_secret(found: object) -> None:
    text = repr(found)
    for secret in ("PRIVATE KEY", REFRESH, "d-SECRET"):
        assert secret not in text


def test_nothing_found_says_how_to_log_in(tmp_path: Path) -> None:
    found = credentials({}, tmp_path)
    assert not found.ok
    assert "application_default_credentials.json is missing" in found.reason
    assert found.hint and "gcloud auth application-default login" in found.hint


def test_gcloud_login_with_quota_project(tmp_path: Path) -> None:
    _adc(tmp_path, _user())
    found = credentials({}, tmp_path)
    assert found.ok, found.reason
    assert (found.method, found.project) == ("authorized_user", "quota-proj-1")
    assert "~/.config/gcloud/application_default_credentials.json" in found.reason
    assert found.project_source is not None and "credentials file" in found.project_source
    _no_secret(found)


def test_service_account_key_from_the_environment(tmp_path: Path) -> None:
    key = tmp_path / "keys" / "sa.json"
    key.parent.mkdir()
    key.write_text(json.dumps(_key()))
    _adc(tmp_path, _user())  # the variable wins over gcloud's file
    found = credentials({"GOOGLE_APPLICATION_CREDENTIALS": str(key)}, tmp_path)
    assert found.ok, found.reason
    assert (found.method, found.project, found.path) == ("service_account", "key-project-1", key)
    assert found.reason.startswith("GOOGLE_APPLICATION_CREDENTIALS (~/keys/sa.json")
    _no_secret(found)


def test_project_order_config_then_environment_then_file(tmp_path: Path) -> None:
    _adc(tmp_path, _user())
    env = {"GOOGLE_CLOUD_PROJECT": "env-project-1", "CLOUDSDK_CORE_PROJECT": "sdk-project-1"}
    found = credentials(env, tmp_path, SkycConfig(gcp=GcpConfig(project="cfg-project-1")))
    assert (found.project, found.project_source) == ("cfg-project-1", "gcp.project in the config")
    found = credentials(env, tmp_path, SkycConfig())
    assert (found.project, found.project_source) == ("env-project-1", "GOOGLE_CLOUD_PROJECT")
    found = credentials({"CLOUDSDK_CORE_PROJECT": "sdk-project-1"}, tmp_path)
    assert (found.project, found.project_source) == ("sdk-project-1", "CLOUDSDK_CORE_PROJECT")


def test_project_from_gcloud_active_configuration(tmp_path: Path) -> None:
    _adc(tmp_path, _user(project=None))
    gcloud = tmp_path / ".config" / "gcloud"
    (gcloud / "active_config").write_text("work\n")
    (gcloud / "configurations").mkdir()
    (gcloud / "configurations" / "config_work").write_text(
        "[core]\naccount = me@example.com\nproject = gcloud-project-1\n")
    found = credentials({}, tmp_path)
    assert found.ok and found.project == "gcloud-project-1"
    assert found.project_source == "gcloud's active configuration"


def test_credentials_without_a_project_are_not_enough(tmp_path: Path) -> None:
    _adc(tmp_path, _user(project=None))
    found = credentials({}, tmp_path)
    assert not found.ok and found.method == "authorized_user"
    assert "but no project" in found.reason
    assert found.hint and "gcp: {project:" in found.hint


def test_variable_pointing_at_a_missing_file(tmp_path: Path) -> None:
    _adc(tmp_path, _user())  # not used: the variable says which file, as Google's libraries do
    found = credentials({"GOOGLE_APPLICATION_CREDENTIALS": str(tmp_path / "gone.json")}, tmp_path)
    assert not found.ok
    assert found.reason == ("GOOGLE_APPLICATION_CREDENTIALS points at ~/gone.json, which does "
                            "not exist")


@pytest.mark.parametrize(("content", "why"), [
    ("{not json", "is unreadable (JSONDecodeError)"),
    ("[1, 2]", "is not a credentials file (no JSON object)"),
    (json.dumps({"type": "api_key", "secret": "s3cr3t"}), "type 'api_key'"),
])
def test_unusable_files_say_why_without_their_content(tmp_path: Path, content: str,
                                                      why: str) -> None:
    path = _adc(tmp_path, {})
    path.write_text(content)
    found = credentials({}, tmp_path)
    assert not found.ok and why in found.reason
    assert "s3cr3t" not in repr(found)


def test_cloudsdk_config_moves_the_well_known_file(tmp_path: Path) -> None:
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "application_default_credentials.json").write_text(json.dumps(_user()))
    assert not credentials({}, tmp_path).ok
    found = credentials({"CLOUDSDK_CONFIG": str(other)}, tmp_path)
    assert found.ok and found.path == other / "application_default_credentials.json"


def test_a_project_that_is_no_project_id(tmp_path: Path) -> None:
    _adc(tmp_path, _user())
    found = credentials({"GOOGLE_CLOUD_PROJECT": "My Project"}, tmp_path)
    assert not found.ok
    assert "'My Project' from GOOGLE_CLOUD_PROJECT is not a project id" in found.reason


def test_config_section_validates_the_project() -> None:
    assert GcpConfig(project=" my-project-1 ").project == "my-project-1"
    assert GcpConfig(project="example.com:my-project").project == "example.com:my-project"
    for bad in ("Bad_Project", "short", "1starts-with-digit", "ends-with-"):
        with pytest.raises(ValidationError, match="is not a project id"):
            GcpConfig(project=bad)
    with pytest.raises(ValidationError):
        GcpConfig.model_validate({"projet": "my-project-1"})


def test_gcp_section_of_the_config_file(tmp_path: Path) -> None:
    from skyc.errors import ConfigError
    from skyc.settings.config import load_config

    path = tmp_path / "config.yaml"
    path.write_text("gcp:\n  project: my-project-1\n")
    config = load_config(path)
    assert config.gcp.project == "my-project-1"
    found = credentials({}, tmp_path, config)
    assert not found.ok  # a project alone is no login
    _adc(tmp_path, _user(project=None))
    assert credentials({}, tmp_path, config).project == "my-project-1"
    assert load_config(tmp_path / "missing.yaml").gcp.project is None
    path.write_text("gcp:\n  projet: my-project-1\n")
    with pytest.raises(ConfigError, match=r"gcp\.projet"):
        load_config(path)
    path.write_text("gcp:\n  project: My_Project\n")
    with pytest.raises(ConfigError, match=r"gcp\.project: .*is not a project id"):
        load_config(path)
