"""Whether AWS credentials are present, by cheap local checks only (nothing is called)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from skyc.compiler.base import Credentials
from skyc.config import SkycConfig

HELP = ("set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE), "
        "or run `aws configure`")


def credentials(
    env: Mapping[str, str], home: Path, config: SkycConfig | None = None
) -> Credentials:
    checks = [
        (bool(env.get("AWS_ACCESS_KEY_ID")), "AWS_ACCESS_KEY_ID is set"),
        (bool(env.get("AWS_PROFILE")), "AWS_PROFILE is set"),
        ((home / ".aws" / "credentials").is_file(), "~/.aws/credentials exists"),
        ((home / ".aws" / "config").is_file(), "~/.aws/config exists"),
    ]
    for ok, why in checks:
        if ok:
            return Credentials(ok=True, reason=why)
    return Credentials(ok=False, reason="no aws credentials found", hint=HELP)
