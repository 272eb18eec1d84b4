"""What the bucket tests share: whether FUSE mounts can be made here, and a user whose
skyc reaches a moto server as its AWS-compatible store (its config and credentials)."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from skyc.model.nodes import ClusterInfo
from tests.support.moto_server import MotoServer
from tests.support.terraform import TERRAFORM_ENV, plugin_dir

# moto takes any key: this one is looked for in every file skyc writes.
USER_SECRET = "skyc-e2e-secret-5d0c9a7741"
USER_KEY_ID = "AKIDSKYCTEST"


def fuse_unavailable() -> str | None:
    """Why buckets cannot be mounted here (None: they can)."""
    if shutil.which("rclone") is None:
        return "rclone is not installed (Debian package rclone)"
    if shutil.which("fusermount3") is None and shutil.which("fusermount") is None:
        return "fusermount3 is not installed (Debian package fuse3)"
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse: FUSE is not available on this machine"
    if os.geteuid() != 0 and not os.access("/dev/fuse", os.R_OK | os.W_OK):
        return "needs root (or /dev/fuse open to this user) to mount on local nodes"
    try:
        import moto  # noqa: F401
    except ImportError:
        return "moto is not installed"
    return None


FUSE_UNAVAILABLE = fuse_unavailable()


def storage_user(runner: Any, moto: MotoServer) -> None:
    """A `skyc` runner (tests.e2e.conftest.Skyc) whose config points AWS at ``moto`` and
    whose environment holds the user's keys (and the offline terraform provider)."""
    runner.env.update({**TERRAFORM_ENV, "AWS_ACCESS_KEY_ID": USER_KEY_ID,
                       "AWS_SECRET_ACCESS_KEY": USER_SECRET,
                       "AWS_DEFAULT_REGION": "us-east-1"})
    if plugin_dir():
        runner.env["SKYC_TF_PLUGIN_DIR"] = str(plugin_dir())
    runner.home.mkdir(parents=True, exist_ok=True)
    (runner.home / "config.yaml").write_text(yaml.safe_dump(
        {"aws": {"endpoint_url": moto.url}}))


def user_s3(moto: MotoServer) -> Any:
    """boto3's S3 client, as that user."""
    import boto3

    return boto3.client("s3", region_name="us-east-1", endpoint_url=moto.url,
                        aws_access_key_id=USER_KEY_ID, aws_secret_access_key=USER_SECRET)


def files_holding(root: Path, needle: bytes) -> list[Path]:
    """The files under ``root`` holding ``needle`` (mount points are not entered)."""
    found = []
    for top, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not os.path.ismount(os.path.join(top, d))]
        for name in files:
            path = Path(top, name)
            if path.is_file() and needle in path.read_bytes():
                found.append(path)
    return found


@contextlib.contextmanager
def mounts_released(info: ClusterInfo, *roots: Path) -> Iterator[ClusterInfo]:
    """``info`` for the ``with`` body; then its jobs stopped and its mounts released (by
    the agent, then by force whatever is left under ``roots``), even when it failed."""
    from skyc.runtime.control import stop_all_jobs
    from tests.support.sshd import unmount_under

    try:
        yield info
    finally:
        try:
            stop_all_jobs(info)
        finally:
            for root in roots:
                unmount_under(root)
