"""Google Cloud Storage."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from skyc.errors import StorageError
from skyc.storage.stores.base import (
    BucketPath,
    RcloneSettings,
    Store,
    is_ip_address,
    split_url,
)

if TYPE_CHECKING:
    from skyc.settings.config import SkycConfig


def name_problem(name: str) -> str | None:
    """GCS's bucket naming rules (names with dots may be up to 222 characters, each
    part at most 63)."""
    import re

    if not 3 <= len(name) <= (222 if "." in name else 63):
        return "it must be 3 to 63 characters long (222 with dots, 63 between dots)"
    if any(len(part) > 63 for part in name.split(".")):
        return "each dot-separated part must be at most 63 characters"
    if not re.fullmatch(r"[a-z0-9._-]+", name):
        return "only lowercase letters, digits, dots, hyphens and underscores are allowed"
    if not (name[0].isalnum() and name[-1].isalnum()):
        return "it must start and end with a lowercase letter or a digit"
    if name.startswith("goog") or "google" in name or "g00gle" in name:
        return "it must not start with 'goog' nor contain 'google'"
    if is_ip_address(name):
        return "it must not look like an IP address"
    return None


def parse_url(url: str) -> BucketPath:
    scheme = len("gcs://") if url.lower().startswith("gcs://") else len("gs://")
    bucket, path = split_url(url, scheme)
    if not bucket:
        raise StorageError(f"{url!r} names no bucket", hint="write gs://BUCKET[/PATH]")
    return BucketPath("gcs", bucket, path)


def url(target: BucketPath) -> str:
    return f"gs://{target.bucket}" + (f"/{target.path}" if target.path else "")


def rclone(credentials: Mapping[str, str], settings: Mapping[str, str | None]
           ) -> RcloneSettings:
    """``credentials``: a service account key (none: the node's own identity, or no
    credentials at all against an endpoint of its own, an emulator's)."""
    out: RcloneSettings = {"TYPE": "google cloud storage", "BUCKET_POLICY_ONLY": "true"}
    endpoint = settings.get("endpoint")
    if endpoint:
        out["ENDPOINT"] = str(endpoint)
    if credentials.get("SERVICE_ACCOUNT_CREDENTIALS"):
        out["SERVICE_ACCOUNT_CREDENTIALS"] = credentials["SERVICE_ACCOUNT_CREDENTIALS"]
    elif endpoint:
        out["ANONYMOUS"] = "true"
    else:
        out["ENV_AUTH"] = "true"
    return out


def credentials(env: Mapping[str, str], home: Path, config: SkycConfig) -> dict[str, str]:
    """The service account key GOOGLE_APPLICATION_CREDENTIALS names."""
    path = env.get("GOOGLE_APPLICATION_CREDENTIALS")
    if path and Path(path).is_file():
        return {"SERVICE_ACCOUNT_CREDENTIALS": Path(path).read_text()}
    return {}


def emulator_endpoint(host: str) -> str:
    """The JSON API of the GCS emulator at ``host`` (STORAGE_EMULATOR_HOST: ``HOST:PORT``
    or a URL), as rclone's endpoint takes it: ``http://HOST:PORT/storage/v1/``."""
    base = host if "://" in host else f"http://{host}"
    return base.rstrip("/") + "/storage/v1/"


def settings(target: BucketPath, config: SkycConfig, env: Mapping[str, str], home: Path,
             region: str | None) -> dict[str, str | None]:
    """An emulator's endpoint when STORAGE_EMULATOR_HOST names one (the variable Google's
    own client libraries read); else none (GCS itself)."""
    host = env.get("STORAGE_EMULATOR_HOST", "").strip()
    return {"endpoint": emulator_endpoint(host) if host else None}


STORE = Store(name="gcs", title="GCS bucket", schemes=("gs://", "gcs://"),
              name_rule=name_problem, remote="skycgcs", parse_url=parse_url, url=url,
              rclone=rclone, credentials=credentials, settings=settings,
              credential_settings=("SERVICE_ACCOUNT_CREDENTIALS", "ANONYMOUS"),
              credentials_help=("set GOOGLE_APPLICATION_CREDENTIALS to a service account "
                                "key file that can read (and write) the bucket"))
