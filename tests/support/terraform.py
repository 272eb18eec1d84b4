"""Helpers for tests that run the real terraform binary."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

MIRROR_CANDIDATES = ("/opt/tf-plugins",)
# Set for every terraform the tests run: the AWS provider (and SDKs) never probe the
# EC2 instance-metadata endpoint for credentials (169.254.169.254 is off loopback).
# GOGC=400: terraform and its AWS provider (Go) collect garbage a quarter as often. The
# provider builds its whole schema on each start; with Go's default (100)
# tests/jobs/test_stop_start.py spent 116 s of CPU, 103 s of it in terraform, and 71 s
# with 400 (a plan of an empty stack: 620 MB peak memory before, 660 MB after). The AWS
# tests run four at a time on two cores, so the CPU they save is wall time saved.
TERRAFORM_ENV = {"AWS_EC2_METADATA_DISABLED": "true", "GOGC": "400"}


def plugin_dir() -> str | None:
    """An offline provider mirror, when this machine has one."""
    explicit = os.environ.get("SKYC_TF_PLUGIN_DIR")
    if explicit:
        return explicit
    return next((p for p in MIRROR_CANDIDATES if Path(p).is_dir()), None)


def has_aws_provider() -> bool:
    mirror = plugin_dir()
    return mirror is not None and any(
        Path(mirror).glob("registry.terraform.io/hashicorp/aws/*")
    )


requires_terraform = pytest.mark.skipif(
    shutil.which("terraform") is None and shutil.which("tofu") is None,
    reason="terraform (or tofu) is not installed",
)
requires_aws_provider = pytest.mark.skipif(
    not has_aws_provider(), reason="no offline mirror with the hashicorp/aws provider"
)


@pytest.fixture
def skyc_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh $SKYC_HOME, with the offline provider mirror when there is one."""
    home = tmp_path / "skyc-home"
    monkeypatch.setenv("SKYC_HOME", str(home))
    for key, value in TERRAFORM_ENV.items():
        monkeypatch.setenv(key, value)
    mirror = plugin_dir()
    if mirror:
        monkeypatch.setenv("SKYC_TF_PLUGIN_DIR", mirror)
    yield home
