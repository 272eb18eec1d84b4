"""What the nodes are given to reach a task's buckets: the mount tool's settings for
each store the task uses, credentials among them.

The credentials are the user's own (each store reads them from the environment or its
usual files), handed to the nodes' mount processes only: never written into a stack,
a plan file, a log or the state. Nodes on the cloud whose store it is use their own
identity instead (``ENV_AUTH``: the cluster's instance role or service account, which
its stack grants exactly the task's buckets), as do nodes when no credentials are found.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from skyc.settings.config import SkycConfig
from skyc.storage.stores import native_store, store
from skyc.storage.stores.s3 import DEFAULT_REGION as DEFAULT_S3_REGION
from skyc.storage.stores.s3 import aws_credentials
from skyc.storage.uses import BucketUse

__all__ = ["DEFAULT_S3_REGION", "rclone_env", "reach_problem", "s3_configured"]


def s3_configured(config: SkycConfig, env: Mapping[str, str], home: Path) -> bool:
    """AWS credentials or an AWS-compatible endpoint are set up."""
    return bool(config.aws.endpoint_url or aws_credentials(env, home, config.aws.profile))


def reach_problem(use: BucketUse, config: SkycConfig, cloud: str,
                  env: Mapping[str, str] | None = None,
                  home: Path | None = None) -> str | None:
    """Why nodes on ``cloud`` could not reach ``use``'s bucket (None: they can): off the
    store's own cloud (or on it, for a bucket its identity cannot be granted) the nodes
    need the user's credentials for the store, or an endpoint that takes none."""
    env = os.environ if env is None else env
    home = Path.home() if home is None else home
    found = store(use.store)
    where = found.settings(use.location, config, env, home, None)
    given = found.rclone(found.credentials(env, home, config), where)
    if any(given.get(name) for name in found.credential_settings):
        return None  # the user's credentials for it (for its account, where it has one)
    if where.get("endpoint") and found.endpoint_without_credentials:
        return None
    if native_store(cloud) is found and (use.created or found.identity_for_existing):
        return None
    return (f"{use.field}: nodes on {cloud} cannot reach {use.url}: no {found.title} "
            "credentials were found here to give them")


def rclone_env(uses: Iterable[BucketUse], config: SkycConfig,
               env: Mapping[str, str] | None = None, home: Path | None = None,
               regions: Mapping[str, str] | None = None,
               cloud: str | None = None) -> dict[str, str]:
    """``RCLONE_CONFIG_<REMOTE>_<SETTING>`` for every store ``uses`` name.
    ``regions``: a created bucket's region, by bucket. ``cloud``: where the nodes are
    (None: this machine, which uses the user's credentials)."""
    env = os.environ if env is None else env
    home = Path.home() if home is None else home
    native = native_store(cloud) if cloud is not None else None
    out: dict[str, str] = {}
    for use in uses:
        found = store(use.store)
        region = (regions or {}).get(use.bucket)
        where = found.settings(use.location, config, env, home, region)
        # On its own cloud (not an emulator's endpoint) a node has an identity of its own,
        # granted the task's buckets (those skyc created, where only those can be).
        own = (native is found and not where.get("endpoint")
               and (use.created or found.identity_for_existing))
        if own:
            where = {**where, "identity": "node"}
        settings = found.rclone({} if own else found.credentials(env, home, config), where)
        prefix = f"RCLONE_CONFIG_{found.remote_name(use.location).upper()}_"
        for key, value in settings.items():
            out.setdefault(prefix + key, value)
    return dict(sorted(out.items()))
