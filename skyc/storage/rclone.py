"""rclone on this machine: what checks a bucket a task reads and uploads a created
bucket's local sources. The nodes run it through their agent (skyc.runtime)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence

from skyc.errors import StorageError

INSTALL_HINT = ("install rclone (Debian/Ubuntu: apt-get install rclone fuse3; "
                "else https://rclone.org/install/)")
CHECK_TIMEOUT_S = 60.0


def rclone_binary() -> str:
    found = shutil.which("rclone")
    if found is None:
        raise StorageError("rclone is not installed on this machine: skyc uses it to "
                           "check and upload buckets", hint=INSTALL_HINT)
    return found


def tool_env(settings: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """rclone's environment and extra flags: the remote settings added; a CA bundle
    named by AWS_CA_BUNDLE given as --ca-cert (rclone refuses the variable itself)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RCLONE_CONFIG_")}
    env.update(settings)
    flags: list[str] = []
    bundle = env.pop("AWS_CA_BUNDLE", None)
    if bundle:
        flags += ["--ca-cert", bundle]
    return env, flags


def run(args: Sequence[str], settings: Mapping[str, str], *,
        timeout: float = CHECK_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    env, flags = tool_env(settings)
    try:
        return subprocess.run([rclone_binary(), *args, *flags], env=env, text=True,
                              capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise StorageError(f"rclone {args[0]} did not answer within {timeout:.0f} s",
                           hint="check that the store's endpoint is reachable") from None


def reason(stderr: str) -> str:
    """The line of rclone's output that says what went wrong."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    for line in reversed(lines):
        if any(w in line for w in ("NoSuchBucket", "AccessDenied", "403", "404",
                                   "directory not found", "Failed", "ERROR")):
            return line.split(": ", 1)[-1] if "ERROR" in line else line
    return lines[-1] if lines else "rclone failed"
