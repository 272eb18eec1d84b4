"""Amazon S3 (and AWS-compatible endpoints: MinIO, LocalStack, moto)."""

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
    is_ip_address,
    split_url,
)

if TYPE_CHECKING:
    from skyc.settings.config import SkycConfig

DEFAULT_REGION = "us-east-1"
_PREFIXES = ("xn--", "sthree-", "amzn-s3-demo-")
_SUFFIXES = ("-s3alias", "--ol-s3", ".mrap", "--x-s3")


def name_problem(name: str) -> str | None:
    """S3's general purpose bucket naming rules."""
    problem = dns_name_problem(name, allowed="a-z0-9.-",
                               extra="lowercase letters, digits, dots and hyphens")
    if problem:
        return problem
    if ".." in name:
        return "two dots in a row are not allowed"
    if is_ip_address(name):
        return "it must not look like an IP address"
    if name.startswith(_PREFIXES) or name.endswith(_SUFFIXES):
        return "it must not start with xn--, sthree- or amzn-s3-demo-, nor end with -s3alias"
    return None


def parse_url(url: str) -> BucketPath:
    bucket, path = split_url(url, len("s3://"))
    if not bucket:
        raise StorageError(f"{url!r} names no bucket", hint="write s3://BUCKET[/PATH]")
    return BucketPath("s3", bucket, path)


def url(target: BucketPath) -> str:
    return f"s3://{target.bucket}" + (f"/{target.path}" if target.path else "")


def rclone(credentials: Mapping[str, str], settings: Mapping[str, str | None]
           ) -> RcloneSettings:
    """``credentials``: ACCESS_KEY_ID, SECRET_ACCESS_KEY[, SESSION_TOKEN] (none: the
    node's own role); ``settings``: region, endpoint."""
    out: RcloneSettings = {"TYPE": "s3"}
    endpoint = settings.get("endpoint")
    out["PROVIDER"] = "Other" if endpoint else "AWS"
    if endpoint:
        out.update(ENDPOINT=endpoint, FORCE_PATH_STYLE="true")
    if settings.get("region"):
        out["REGION"] = str(settings["region"])
    if credentials:
        out.update({k: v for k, v in credentials.items() if v})
    else:
        out["ENV_AUTH"] = "true"
    return out


def aws_credentials(env: Mapping[str, str], home: Path, profile: str | None
                    ) -> dict[str, str]:
    """ACCESS_KEY_ID, SECRET_ACCESS_KEY[, SESSION_TOKEN] from the environment, else from
    ``~/.aws/credentials`` (the profile named, else AWS_PROFILE, else default)."""
    if env.get("AWS_ACCESS_KEY_ID") and env.get("AWS_SECRET_ACCESS_KEY"):
        found = {"ACCESS_KEY_ID": env["AWS_ACCESS_KEY_ID"],
                 "SECRET_ACCESS_KEY": env["AWS_SECRET_ACCESS_KEY"]}
        if env.get("AWS_SESSION_TOKEN"):
            found["SESSION_TOKEN"] = env["AWS_SESSION_TOKEN"]
        return found
    parser = configparser.RawConfigParser()
    try:
        parser.read(Path(env.get("AWS_SHARED_CREDENTIALS_FILE")
                         or home / ".aws" / "credentials"))
    except configparser.Error:
        return {}
    section = profile or env.get("AWS_PROFILE") or "default"
    if not parser.has_section(section):
        return {}
    names = {"ACCESS_KEY_ID": "aws_access_key_id",
             "SECRET_ACCESS_KEY": "aws_secret_access_key",
             "SESSION_TOKEN": "aws_session_token"}
    return {k: parser.get(section, v) for k, v in names.items()
            if parser.has_option(section, v)}


def credentials(env: Mapping[str, str], home: Path, config: SkycConfig) -> dict[str, str]:
    return aws_credentials(env, home, config.aws.profile)


def settings(target: BucketPath, config: SkycConfig, env: Mapping[str, str], home: Path,
             region: str | None) -> dict[str, str | None]:
    return {"endpoint": config.aws.endpoint_url,
            "region": region or env.get("AWS_DEFAULT_REGION") or DEFAULT_REGION}


STORE = Store(name="s3", title="S3 bucket", schemes=("s3://",),
              name_rule=name_problem, remote="skycs3", parse_url=parse_url, url=url,
              rclone=rclone, credentials=credentials, settings=settings,
              credential_settings=("ACCESS_KEY_ID",),
              credentials_help=("set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or keep "
                                "keys in ~/.aws/credentials (the profile aws.profile or "
                                "AWS_PROFILE names)"))
