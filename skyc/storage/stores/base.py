"""What a store is: its URL schemes, its bucket name rules, where its buckets are read
from, and its settings for the mount tool (rclone). Each store is a small module of
this package holding one :class:`Store` as ``STORE``."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from skyc.errors import StorageError

if TYPE_CHECKING:
    from skyc.settings.config import SkycConfig


@dataclass(frozen=True)
class BucketPath:
    """A bucket and a path inside it (``""``: the whole bucket)."""

    store: str
    bucket: str
    path: str = ""
    account: str = ""  # Azure: the storage account that holds the container

    @property
    def url(self) -> str:
        from skyc.storage.stores import store

        return store(self.store).url(self)


# The rclone settings of a remote, by setting name (TYPE, PROVIDER, ...): given to the
# nodes as RCLONE_CONFIG_<REMOTE>_<SETTING>.
RcloneSettings = dict[str, str]
# The user's credentials for a store (environment, home, config): names the store's
# rclone settings take (ACCESS_KEY_ID, ...); empty: none found here.
CredentialReader = Callable[[Mapping[str, str], Path, "SkycConfig"], dict[str, str]]
# Where a bucket is reached (bucket, config, environment, home, its region).
SettingsReader = Callable[[BucketPath, "SkycConfig", Mapping[str, str], Path, "str | None"],
                          dict[str, "str | None"]]


def no_credentials(env: Mapping[str, str], home: Path, config: SkycConfig) -> dict[str, str]:
    return {}


def no_settings(target: BucketPath, config: SkycConfig, env: Mapping[str, str], home: Path,
                region: str | None) -> dict[str, str | None]:
    return {}


@dataclass(frozen=True)
class Store:
    name: str                                  # s3, gcs, azure, r2
    title: str                                 # what the store is called in messages
    schemes: tuple[str, ...]                   # "s3://"
    name_rule: Callable[[str], str | None]     # why a bucket name is refused, or None
    remote: str                                # the rclone remote's name on the nodes
    parse_url: Callable[[str], BucketPath]
    url: Callable[[BucketPath], str]
    # (credentials, settings) -> the remote's rclone settings; settings also hold
    # identity=node where the nodes reach the bucket with their own identity
    rclone: Callable[[Mapping[str, str], Mapping[str, str | None]], RcloneSettings]
    credentials: CredentialReader = no_credentials
    settings: SettingsReader = no_settings
    # One rclone remote per account (Azure: an account's settings, key and endpoint are
    # its own), named ``<remote><account>``; else one remote for the whole store.
    remote_per_account: bool = False
    # Whether a cluster's own identity can be granted a bucket skyc did not create (Azure:
    # no, a role is scoped to a container by its resource group, which a URL does not
    # give; nodes reach such a container with the user's key).
    identity_for_existing: bool = True
    credentials_help: str = ""                 # where the user's credentials are read from
    # The rclone settings that carry the user's credentials (one present: reachable).
    credential_settings: tuple[str, ...] = ()
    # Whether an endpoint of its own (an emulator, an S3-compatible server) may be
    # reached with no credentials; R2's endpoint is R2 itself, which needs its keys.
    endpoint_without_credentials: bool = True

    def owns(self, url: str) -> bool:
        return url.lower().startswith(self.schemes)

    def matches(self, url: str) -> bool:
        """Whether ``url`` (one of its schemes) is one of its buckets: ``parse_url``
        takes it."""
        try:
            self.parse_url(url)
        except StorageError:
            return False
        return True

    def check_name(self, bucket: str, where: str) -> None:
        problem = self.name_rule(bucket)
        if problem is not None:
            raise StorageError(f"{where}: {bucket!r} is not a valid {self.title} name: "
                                f"{problem}", hint="rename the bucket")

    def remote_name(self, target: BucketPath) -> str:
        """The rclone remote ``target`` is reached through (its settings are given to the
        nodes as ``RCLONE_CONFIG_<REMOTE>_<SETTING>``)."""
        return self.remote + target.account if self.remote_per_account else self.remote

    def remote_path(self, target: BucketPath) -> str:
        """The bucket (and path) in rclone's spelling: ``skycs3:bucket/path``."""
        tail = f"{target.bucket}/{target.path}" if target.path else target.bucket
        return f"{self.remote_name(target)}:{tail}"


def split_url(url: str, scheme_len: int) -> tuple[str, str]:
    """``(bucket, path)`` of ``<scheme>bucket/path``."""
    rest = url[scheme_len:]
    bucket, _, path = rest.partition("/")
    return bucket, path.strip("/")


def is_ip_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def dns_name_problem(name: str, *, allowed: str, extra: str = "") -> str | None:
    """The rules most stores share: 3-63 characters of ``allowed``, starting and ending
    with a letter or digit."""
    if not 3 <= len(name) <= 63:
        return f"it must be 3 to 63 characters long (it has {len(name)})"
    if not re.fullmatch(f"[{allowed}]+", name):
        return f"only {extra or 'lowercase letters, digits and hyphens'} are allowed"
    if not (name[0].isalnum() and name[-1].isalnum()):
        return "it must start and end with a lowercase letter or a digit"
    return None
