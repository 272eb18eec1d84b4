"""Whether AWS credentials are present, by cheap local checks; on an EC2 instance
(its firmware says so) also the instance role, asked of the instance metadata service.

The metadata service is the one thing called, only on EC2 and only when no other
credentials are found: that is how a jobs controller's node (skyc.compiler.aws.roles)
gets its credentials. ``AWS_EC2_METADATA_DISABLED=true`` turns it off, as for the SDKs.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from skyc.compiler.base import Credentials
from skyc.settings.config import SkycConfig

HELP = ("set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE), "
        "or run `aws configure`")
# What an EC2 instance's firmware says about it (Nitro, then Xen instances).
EC2_MARKERS: tuple[tuple[Path, str], ...] = (
    (Path("/sys/devices/virtual/dmi/id/sys_vendor"), "Amazon EC2"),
    (Path("/sys/hypervisor/uuid"), "ec2"),
)
IMDS_URL = "http://169.254.169.254"
IMDS_TIMEOUT_S = 0.5  # the service is on the instance itself: it answers in milliseconds


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
    if env.get("AWS_EC2_METADATA_DISABLED", "").lower() != "true" and on_ec2():
        role = instance_role()
        if role:
            return Credentials(ok=True, reason=f"the instance role {role} (EC2 metadata)")
    return Credentials(ok=False, reason="no aws credentials found", hint=HELP)


def on_ec2() -> bool:
    """Whether this machine is an EC2 instance, by what its firmware reports."""
    for path, marker in EC2_MARKERS:
        try:
            if path.read_text().strip().lower().startswith(marker.lower()):
                return True
        except OSError:
            continue
    return False


def instance_role() -> str | None:
    """The IAM role of this instance's profile, from the metadata service (IMDSv2: a
    session token first, as skyc's instances require); None without one."""
    import urllib.error
    import urllib.request

    try:
        token_request = urllib.request.Request(
            f"{IMDS_URL}/latest/api/token", method="PUT",
            headers={"X-aws-ec2-metadata-token-ttl-seconds": "60"})
        with urllib.request.urlopen(token_request, timeout=IMDS_TIMEOUT_S) as resp:
            token = resp.read().decode()
        roles_request = urllib.request.Request(
            f"{IMDS_URL}/latest/meta-data/iam/security-credentials/",
            headers={"X-aws-ec2-metadata-token": token})
        with urllib.request.urlopen(roles_request, timeout=IMDS_TIMEOUT_S) as resp:
            names = resp.read().decode().split()
    except (OSError, urllib.error.URLError, ValueError):
        return None
    return names[0] if names else None
