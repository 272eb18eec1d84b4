"""The ``azure:`` section of the config file.

::

    azure:
      subscription_id: 00000000-0000-0000-0000-000000000000   # else AZURE_SUBSCRIPTION_ID,
                                                              # else the Azure CLI's default

Only pydantic here: the config module imports this model. Credentials never go
in the config file: the Azure CLI login or a service principal's environment
variables are read where they are (see ``credentials``).
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, field_validator

_GUID = re.compile(r"^[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$")


def is_subscription_id(value: str) -> bool:
    """Whether ``value`` has the shape of an Azure subscription id (a GUID)."""
    return bool(_GUID.match(value.strip()))


class AzureConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)  # built on first use

    subscription_id: str | None = None

    @field_validator("subscription_id")
    @classmethod
    def _guid(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not is_subscription_id(value):
            raise ValueError(
                f"{value!r} is not a subscription id (a GUID such as "
                "00000000-0000-0000-0000-000000000000; `az account list` shows yours)"
            )
        return value.strip().lower()
