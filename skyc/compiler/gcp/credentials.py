"""Which GCP login and project skyc would provision with, by cheap local checks only.

Application default credentials, in the order Google's auth libraries (and so
the Pulumi and Terraform google providers) look for them:

- ``GOOGLE_APPLICATION_CREDENTIALS``: the path of a credentials file (a service
  account key, a workload identity federation config, ...);
- gcloud's well-known file, written by ``gcloud auth application-default
  login``: ``application_default_credentials.json`` in ``$CLOUDSDK_CONFIG``
  (default ``~/.config/gcloud``).

The project comes from ``gcp.project`` in the config, else
``GOOGLE_CLOUD_PROJECT`` (``CLOUDSDK_CORE_PROJECT``, ``GCLOUD_PROJECT``), else
the credentials file (``project_id`` of a service account key,
``quota_project_id`` of a user login), else gcloud's active configuration.

Of a credentials file only ``type`` and the project fields are read; the file
itself (keys, refresh tokens) is never kept, and nothing here calls the network
(the metadata server of a GCE VM is not probed).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Literal, NamedTuple, cast

from skyc.compiler.gcp.config import GcpConfig, is_project_id
from skyc.settings.config import SkycConfig

Method = Literal["service_account", "authorized_user", "external_account",
                 "impersonated_service_account", "external_account_authorized_user"]
_METHODS: tuple[str, ...] = ("service_account", "authorized_user", "external_account",
                             "impersonated_service_account", "external_account_authorized_user")
_PROJECT_VARS = ("GOOGLE_CLOUD_PROJECT", "CLOUDSDK_CORE_PROJECT", "GCLOUD_PROJECT")
ADC_FILE = "application_default_credentials.json"
_ENV_FILE = "GOOGLE_APPLICATION_CREDENTIALS"

LOGIN_HELP = ("run `gcloud auth application-default login`, or set "
              "GOOGLE_APPLICATION_CREDENTIALS to a service account key file")
PROJECT_HELP = ("set `gcp: {project: <id>}` in the config, or GOOGLE_CLOUD_PROJECT, or run "
                "`gcloud config set project <id>`")


class GcpCredentials(NamedTuple):
    """What was found, and in words how. No field ever holds a secret.

    ``ok`` is False when skyc could not provision from here (no usable
    credentials, or no project); ``reason`` then says why and ``hint`` what to do.
    """

    ok: bool
    reason: str
    hint: str | None = None
    method: Method | None = None
    path: Path | None = None         # the credentials file
    project: str | None = None
    project_source: str | None = None


def gcloud_dir(env: Mapping[str, str], home: Path) -> Path:
    explicit = env.get("CLOUDSDK_CONFIG")
    return Path(explicit).expanduser() if explicit else home / ".config" / "gcloud"


def _shown(path: Path, home: Path) -> str:
    try:
        return "~/" + str(path.relative_to(home))
    except ValueError:
        return str(path)


def _credentials_file(env: Mapping[str, str], home: Path) -> tuple[Path | None, str]:
    """The credentials file to use and how it was chosen (or why there is none)."""
    explicit = env.get("GOOGLE_APPLICATION_CREDENTIALS")
    if explicit:
        return Path(explicit).expanduser(), _ENV_FILE
    well_known = gcloud_dir(env, home) / ADC_FILE
    if well_known.is_file():
        return well_known, "application default credentials"
    return None, f"no application default credentials ({_shown(well_known, home)} is missing)"


def _read(path: Path) -> tuple[str | None, str | None, str | None]:
    """(type, project in the file, problem): only those fields are kept."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return None, None, "does not exist"
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return None, None, f"is unreadable ({type(exc).__name__})"
    if not isinstance(data, dict):
        return None, None, "is not a credentials file (no JSON object)"
    kind = data.get("type")
    project = data.get("project_id") or data.get("quota_project_id")
    del data
    if kind not in _METHODS:
        return None, None, f"is not a credentials file skyc knows (type {kind!r})"
    return str(kind), str(project) if isinstance(project, str) and project else None, None


def _gcloud_project(env: Mapping[str, str], home: Path) -> str | None:
    """The project of gcloud's active configuration, if it names one."""
    import configparser  # only where gcloud's configuration is read

    directory = gcloud_dir(env, home)
    active = env.get("CLOUDSDK_ACTIVE_CONFIG_NAME")
    if not active:
        try:
            active = (directory / "active_config").read_text().strip() or "default"
        except OSError:
            active = "default"
    parser = configparser.ConfigParser()
    try:
        parser.read(directory / "configurations" / f"config_{active}")
    except configparser.Error:
        return None
    value = parser.get("core", "project", fallback="").strip()
    return value or None


def _project(config: GcpConfig | None, env: Mapping[str, str], home: Path,
             in_file: str | None, file_label: str) -> tuple[str | None, str | None]:
    if config is not None and config.project:
        return config.project, "gcp.project in the config"
    for var in _PROJECT_VARS:
        if env.get(var):
            return env[var].strip(), var
    if in_file:
        return in_file, file_label
    found = _gcloud_project(env, home)
    if found:
        return found, "gcloud's active configuration"
    return None, None


def credentials(env: Mapping[str, str], home: Path,
                config: SkycConfig | None = None) -> GcpCredentials:
    """The credentials and project found (the project of ``config.gcp`` first), or why not."""
    return find(env, home, config.gcp if config is not None else None)


def find(env: Mapping[str, str], home: Path, config: GcpConfig | None = None) -> GcpCredentials:
    """The credentials and project found with the ``gcp:`` section ``config``, or why not."""
    path, how = _credentials_file(env, home)
    if path is None:
        return GcpCredentials(ok=False, reason=how, hint=LOGIN_HELP)
    shown = _shown(path, home)
    kind, in_file, problem = _read(path)
    if problem is not None or kind is None:
        where = f"{how} points at {shown}, which" if how in _ENV_FILE else shown
        return GcpCredentials(ok=False, reason=f"{where} {problem}", hint=LOGIN_HELP, path=path)
    method = cast(Method, kind)  # one of _METHODS
    found = f"{how} ({shown}, {kind})"
    project, source = _project(config, env, home, in_file, f"the credentials file {shown}")
    if project is None:
        return GcpCredentials(ok=False, reason=f"{found}, but no project", hint=PROJECT_HELP,
                              method=method, path=path)
    if not is_project_id(project):
        return GcpCredentials(
            ok=False, reason=f"{found}; the project {project!r} from {source} is not a "
            "project id", hint=PROJECT_HELP, method=method, path=path)
    return GcpCredentials(ok=True, reason=f"{found}; project {project} from {source}",
                          method=method, path=path, project=project, project_source=source)
