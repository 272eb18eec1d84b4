"""The ``gcp:`` section of the config file.

::

    gcp:
      project: my-project      # else GOOGLE_CLOUD_PROJECT / CLOUDSDK_CORE_PROJECT, else the
                               # credentials file's project, else gcloud's active project
      service_account_scopes:  # the OAuth scopes of the nodes' service account
        - https://www.googleapis.com/auth/cloud-platform

Only pydantic here: the config module imports this model. Credentials never go
in the config file: application default credentials are read where they are
(see ``credentials``).
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

# GCP project ids: 6 to 30 lower-case letters, digits and hyphens, starting with a
# letter and not ending with a hyphen; old domain-scoped ids carry ``domain:``.
_PROJECT = re.compile(r"^(?:[a-z][a-z0-9.-]*\.[a-z]{2,}:)?[a-z][a-z0-9-]{4,28}[a-z0-9]$")


CLOUD_PLATFORM = "https://www.googleapis.com/auth/cloud-platform"
_SCOPE = re.compile(r"^https://www\.googleapis\.com/auth/[a-z0-9._-]+$")


def is_project_id(value: str) -> bool:
    """Whether ``value`` has the shape of a GCP project id (not a project number or name)."""
    return bool(_PROJECT.match(value))


class GcpConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)  # built on first use

    project: str | None = None
    # Reservations the project holds (names): on-demand offers that GCP grants only
    # from a reservation (a3-ultragpu H200, a4 B200) are chosen only when one is named.
    reservations: list[str] = Field(default_factory=list)
    # The scopes the nodes' service account (one per cluster, created with it and
    # granted no role: what it may do is what IAM grants it) is usable with. The
    # default, cloud-platform, leaves access to IAM, as Google recommends.
    service_account_scopes: list[str] = Field(default_factory=lambda: [CLOUD_PLATFORM])

    @field_validator("project")
    @classmethod
    def _project_id(cls, value: str | None) -> str | None:
        if value is None:
            return None
        value = value.strip()
        if not is_project_id(value):
            raise ValueError(
                f"{value!r} is not a project id (6-30 lower-case letters, digits and "
                "hyphens, starting with a letter; `gcloud projects list` shows yours)"
            )
        return value

    @field_validator("service_account_scopes")
    @classmethod
    def _scopes(cls, value: list[str]) -> list[str]:
        bad = [s for s in value if not _SCOPE.match(s.strip())]
        if bad:
            raise ValueError(
                f"{bad[0]!r} is not an OAuth scope URL (e.g. {CLOUD_PLATFORM}; see "
                "https://developers.google.com/identity/protocols/oauth2/scopes)")
        if not value:
            raise ValueError(f"give at least one scope (e.g. {CLOUD_PLATFORM})")
        return sorted({s.strip() for s in value})
