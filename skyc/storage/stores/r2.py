"""Cloudflare R2 (S3's API at the account's endpoint, ``r2://bucket/path``)."""

from __future__ import annotations

import configparser
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from skyc.errors import StorageError
from skyc.storage.stores.base import (
    BucketPath,
    RcloneSettings,
    Store,
    dns_name_problem,
    split_url,
)

if TYPE_CHECKING:
    from skyc.settings.config import SkycConfig


def name_problem(name: str) -> str | None:
    return dns_name_problem(name, allowed="a-z0-9-")


def parse_url(url: str) -> BucketPath:
    bucket, path = split_url(url, len("r2://"))
    if not bucket:
        raise StorageError(f"{url!r} names no bucket", hint="write r2://BUCKET[/PATH]")
    return BucketPath("r2", bucket, path)


def url(target: BucketPath) -> str:
    return f"r2://{target.bucket}" + (f"/{target.path}" if target.path else "")


def rclone(credentials: Mapping[str, str], settings: Mapping[str, str | None]
           ) -> RcloneSettings:
    out: RcloneSettings = {"TYPE": "s3", "PROVIDER": "Cloudflare", "REGION": "auto"}
    if settings.get("endpoint"):
        out["ENDPOINT"] = str(settings["endpoint"])
    out.update({k: v for k, v in credentials.items() if v})
    return out


def credentials(env: Mapping[str, str], home: Path, config: SkycConfig) -> dict[str, str]:
    """R2's keys, from ``~/.cloudflare/r2.credentials`` (profile ``r2``), as SkyPilot
    keeps them."""
    parser = configparser.RawConfigParser()
    parser.read(home / ".cloudflare" / "r2.credentials")
    if not parser.has_section("r2"):
        return {}
    return {"ACCESS_KEY_ID": parser.get("r2", "aws_access_key_id", fallback=""),
            "SECRET_ACCESS_KEY": parser.get("r2", "aws_secret_access_key", fallback="")}


def settings(target: BucketPath, config: SkycConfig, env: Mapping[str, str], home: Path,
             region: str | None) -> dict[str, str | None]:
    """The account's endpoint (:meth:`skyc.settings.config.R2Config.endpoint`)."""
    return {"endpoint": config.r2.endpoint(home)}


STORE = Store(name="r2", title="R2 bucket", schemes=("r2://",),
              name_rule=name_problem, remote="skycr2", parse_url=parse_url, url=url,
              rclone=rclone, credentials=credentials, settings=settings,
              credential_settings=("ACCESS_KEY_ID",), endpoint_without_credentials=False,
              credentials_help=("keep R2's keys in ~/.cloudflare/r2.credentials (profile "
                                "r2) and the account id in ~/.cloudflare/accountid"))
