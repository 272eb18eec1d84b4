"""Azure Blob Storage: a container in a storage account,
``https://<account>.blob.core.windows.net/<container>[/<path>]``."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
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
    """``credentials``: the account key (none: the node's own identity, when
    ``settings["identity"]`` is ``node``, else the user's login); ``settings``: the
    account, and an endpoint of its own (Azurite, another cloud's blob endpoint).

    rclone 1.60 (Debian 12's) reaches an account with a key at ``https://ACCOUNT.<endpoint>``
    only, where later versions take the endpoint as a URL: an endpoint of its own is
    reached through an account SAS URL instead, which both read the same way. The nodes
    then get that SAS, never the key."""
    account, endpoint = settings.get("account"), settings.get("endpoint")
    key = credentials.get("KEY") if credentials.get("KEY_ACCOUNT") == account else None
    if account and endpoint and key:
        return {"TYPE": "azureblob",
                "SAS_URL": f"{endpoint}?{account_sas(str(account), key)}"}
    out: RcloneSettings = {"TYPE": "azureblob"}
    if account:
        out["ACCOUNT"] = str(account)
    if endpoint:
        out["ENDPOINT"] = str(endpoint)
    if key:
        out["KEY"] = key
    elif settings.get("identity") == "node":
        # the VM's managed identity (the cluster's one user-assigned identity): rclone's
        # use_msi, which every rclone since 1.54 reads (its env_auth came later)
        out["USE_MSI"] = "true"
    else:
        out["ENV_AUTH"] = "true"  # this machine: the user's Azure login
    return out


SAS_VERSION = "2021-08-06"
# How long a SAS made for the nodes holds: a mount outlives the job that made it (the
# next jobs keep it), so it holds for as long as a cluster may reasonably live.
SAS_DAYS = 365


def account_sas(account: str, key: str, now: datetime | None = None) -> str:
    """An account SAS for the blob service (query string), signed with the account's
    ``key``: its containers and blobs listed, read, written, created and deleted, for
    :data:`SAS_DAYS` days from ``now``."""
    import base64
    import binascii
    import hashlib
    import hmac
    import urllib.parse

    try:
        secret = base64.b64decode(key, validate=True)
    except binascii.Error:
        raise StorageError(f"the key of Azure storage account {account} is not base64",
                           hint="check AZURE_STORAGE_KEY or the AccountKey of "
                           "AZURE_STORAGE_CONNECTION_STRING") from None
    expiry = (now or datetime.now(timezone.utc)) + timedelta(days=SAS_DAYS)
    query = {"sv": SAS_VERSION, "ss": "b", "srt": "sco", "sp": "rwdlac",
             "se": expiry.strftime("%Y-%m-%dT%H:%M:%SZ")}
    # account, permissions, services, resource types, start, expiry, IP range,
    # protocols, version, encryption scope: each followed by a newline
    signed = [account, query["sp"], query["ss"], query["srt"], "", query["se"], "", "",
              SAS_VERSION, ""]
    digest = hmac.new(secret, "".join(f"{s}\n" for s in signed).encode(), hashlib.sha256)
    query["sig"] = base64.b64encode(digest.digest()).decode()
    return urllib.parse.urlencode(query)


def connection_string(env: Mapping[str, str]) -> dict[str, str]:
    """The fields of AZURE_STORAGE_CONNECTION_STRING (``Name=value;...``), by name in
    lowercase."""
    fields = {}
    for part in env.get("AZURE_STORAGE_CONNECTION_STRING", "").split(";"):
        name, sep, value = part.partition("=")
        if sep and name.strip():
            fields[name.strip().lower()] = value.strip()
    return fields


def credentials(env: Mapping[str, str], home: Path, config: SkycConfig) -> dict[str, str]:
    """An account key and the account it is of: AZURE_STORAGE_KEY with
    AZURE_STORAGE_ACCOUNT (the Azure CLI's pair), else the AccountKey and AccountName of
    AZURE_STORAGE_CONNECTION_STRING. A key is only ever used for its own account."""
    if env.get("AZURE_STORAGE_KEY") and env.get("AZURE_STORAGE_ACCOUNT"):
        return {"KEY": env["AZURE_STORAGE_KEY"],
                "KEY_ACCOUNT": env["AZURE_STORAGE_ACCOUNT"].strip().lower()}
    fields = connection_string(env)
    if fields.get("accountkey") and fields.get("accountname"):
        return {"KEY": fields["accountkey"], "KEY_ACCOUNT": fields["accountname"].lower()}
    return {}


def settings(target: BucketPath, config: SkycConfig, env: Mapping[str, str], home: Path,
             region: str | None) -> dict[str, str | None]:
    """The container's account, and its blob endpoint when AZURE_STORAGE_CONNECTION_STRING
    is that account's and names one other than Azure's own (Azurite's
    ``http://127.0.0.1:10000/devstoreaccount1``)."""
    out: dict[str, str | None] = {"account": target.account}
    fields = connection_string(env)
    endpoint = fields.get("blobendpoint", "").rstrip("/")
    own = f"https://{target.account}.blob.core.windows.net"
    if (fields.get("accountname", "").lower() == target.account and endpoint
            and endpoint.lower() != own):
        out["endpoint"] = endpoint
    return out


STORE = Store(name="azure", title="Azure container",
              schemes=("https://",), name_rule=name_problem,
              remote="skycaz", parse_url=parse_url, url=url, rclone=rclone,
              credentials=credentials, settings=settings,
              remote_per_account=True, identity_for_existing=False,
              credential_settings=("KEY", "SAS_URL"),
              credentials_help=("set AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY (the "
                                "account's key), or AZURE_STORAGE_CONNECTION_STRING"))
