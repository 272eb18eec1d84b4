"""What the engine is given to create and destroy R2 buckets: R2's keys
(``~/.cloudflare/r2.credentials``) as its AWS keys, in its process environment only,
never in the stack, a file or the state; the user's own AWS settings blanked for that
process, so AWS's keys never reach R2."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from skyc.errors import StorageError
from skyc.settings.config import SkycConfig

REGION = "auto"  # R2 has one region; its S3 API takes this name for it
_BLANKED = ("AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
            "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE", "AWS_ROLE_ARN",
            "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
            "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")


def engine_env(config: SkycConfig, env: Mapping[str, str] | None = None,
               home: Path | None = None) -> dict[str, str]:
    from skyc.storage.stores import store

    found = store("r2")
    keys = found.credentials(os.environ if env is None else env,
                             Path.home() if home is None else home, config)
    if not keys.get("ACCESS_KEY_ID") or not keys.get("SECRET_ACCESS_KEY"):
        raise StorageError("store: r2: no R2 keys found to create or delete the bucket with",
                           hint=found.credentials_help)
    return {**dict.fromkeys(_BLANKED, ""), "AWS_ACCESS_KEY_ID": keys["ACCESS_KEY_ID"],
            "AWS_SECRET_ACCESS_KEY": keys["SECRET_ACCESS_KEY"]}
