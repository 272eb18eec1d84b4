"""The user config file: what it accepts and what it refuses."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from skyc.errors import ConfigError
from skyc.settings.config import load_config


def test_a_backend_without_credentials_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("backend:\n  s3: {bucket: team-state, key: skyc, region: us-east-1}\n")
    assert load_config(path).backend == {
        "s3": {"bucket": "team-state", "key": "skyc", "region": "us-east-1"}}


def test_an_s3_compatible_backends_switches_are_not_credentials(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("backend:\n  s3: {bucket: b, key: k, region: us-east-1, "
                    "skip_credentials_validation: true, use_path_style: true, "
                    "shared_credentials_files: [~/.aws/credentials], "
                    "assume_role_with_web_identity: {role_arn: x, "
                    "web_identity_token_file: /var/run/token}}\n")
    assert load_config(path).backend is not None


def test_credentials_nested_in_a_backend_block_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("backend:\n  s3:\n    bucket: b\n    assume_role_with_web_identity:\n"
                    "      role_arn: arn:aws:iam::1:role/x\n      web_identity_token: hunter2\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert "backend.s3.assume_role_with_web_identity.web_identity_token" in str(info.value)
    assert "hunter2" not in str(info.value)


@pytest.mark.parametrize("key", ["secret_key", "access_key", "token", "client_secret",
                                 "sas_token", "credentials"])
def test_credentials_in_the_backend_are_refused(tmp_path: Path, key: str) -> None:
    # The backend block is written into every stack, which is made to be reviewed.
    path = tmp_path / "config.yaml"
    path.write_text(f"backend:\n  s3:\n    bucket: b\n    {key}: hunter2\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert f"backend.s3.{key}" in str(info.value) and "hunter2" not in str(info.value)


def test_an_unusable_skyc_home_is_a_clean_error(tmp_path: Path) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    out = subprocess.run([sys.executable, "-m", "skyc", "status"], capture_output=True,
                         text=True, timeout=60, env={"SKYC_HOME": str(not_a_dir / "home"),
                                                     "PATH": "/usr/bin:/bin"})
    assert out.returncode == 1
    assert "Traceback" not in out.stderr and "error:" in out.stderr
