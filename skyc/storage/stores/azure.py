"""Azure Blob Storage: a container in a storage account,
``https://<account>.blob.core.windows.net/<container>[/<path>]``."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from skyc.errors import StorageError
from skyc.storage.stores.base import BucketPath, RcloneSettings, Store, dns_name_problem

if TYPE_CHECKING:
    from skyc.settings.config import SkycConfig

_URL = re.compile(r"^https://([a-z0-9]+)\.blob\.core\.windows\.net/([^/]*)/?(.*)$",
                  re.IGNORECASE)


def name_problem(name: str) -> str | None:
    problem = dns_name_problem(name, allowed="a-z0-9-")
    if problem:
        return problem
    if "--" in name:
        return "two hyphens in a row are not allowed"
    return None


def parse_url(url: str) -> BucketPath:
    match = _URL.match(url)
    if match is None or not match.group(2):
        raise StorageError(
            f"{url!r} is not an Azure container URL",
            hint="write https://ACCOUNT.blob.core.windows.net/CONTAINER[/PATH]")
    return BucketPath("azure", match.group(2), match.group(3).strip("/"),
                      account=match.group(1).lower())


def url(target: BucketPath) -> str:
    base = f"https://{target.account}.blob.core.windows.net/{target.bucket}"
    return base + (f"/{target.path}" if target.path else "")


def rclone(credentials: Mapping[str, str], settings: Mapping[str, str | None]
           ) -> RcloneSettings:
    out: RcloneSettings = {"TYPE": "azureblob"}
    if settings.get("account"):
        out["ACCOUNT"] = str(settings["account"])
    if settings.get("endpoint"):
        out["ENDPOINT"] = str(settings["endpoint"])
    if credentials.get("KEY"):
        out["KEY"] = credentials["KEY"]
    else:
        out["ENV_AUTH"] = "true"
    return out


def credentials(env: Mapping[str, str], home: Path, config: SkycConfig) -> dict[str, str]:
    key = env.get("AZURE_STORAGE_KEY")
    return {"KEY": key} if key else {}


def settings(target: BucketPath, config: SkycConfig, env: Mapping[str, str], home: Path,
             region: str | None) -> dict[str, str | None]:
    return {"account": target.account}


STORE = Store(name="azure", title="Azure container",
              schemes=("https://",), name_rule=name_problem,
              remote="skycaz", parse_url=parse_url, url=url, rclone=rclone,
              credentials=credentials, settings=settings,
              can_create=False,
              notes=("skyc reads and writes existing Azure containers; it does not "
                     "create them yet",))
