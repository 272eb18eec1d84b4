"""The node bootstrap (cloud-init user data, GCP startup script): what it holds, that
bash parses it, and a real run of it under ``set -eu`` on two kinds of image.

The runs use real bash, coreutils and useradd in a directory of their own on PATH.
What cannot be touched on this machine is stood in for by small scripts that record
their arguments: ``systemctl`` (its apt timers would be disabled here),
``apt-get``/``dpkg``/``pkill`` (packages and processes of this machine) and
``fuser`` (answers "busy" once: another process holding the dpkg lock).
Skips when not root (the bootstrap runs as root on a node).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from skyc.compiler.templates import render
from skyc.runtime.boot_record import READY_MARKER

UNITS = ("apt-daily.timer", "apt-daily-upgrade.timer", "unattended-upgrades.service")


def _rendered(**extra: object) -> str:
    return render("node_bootstrap.sh.j2", cluster="c-1", ssh_user="skycboot", **extra)


@pytest.mark.parametrize("environment", [None, {"TPU_ACCELERATOR_TYPE": "v4-8"}])
def test_the_bootstrap_parses_and_writes_its_marker_last(
        tmp_path: Path, environment: dict[str, str] | None) -> None:
    text = _rendered(**({"environment": environment} if environment else {}))
    script = tmp_path / "bootstrap.sh"
    script.write_text(text)
    checked = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    assert lines[0] == "#!/bin/bash" and "set -eu" in lines
    assert lines[-1] == 'install -m 0644 -o "$SKYC_USER" /dev/null "$SKYC_DIR/ready"'
    assert READY_MARKER == ".skyc/ready"
    # Unattended upgrades are stopped before anything uses apt (python3's install).
    stop = text.index("systemctl stop")
    assert stop < text.index("apt-get install")
    for unit in UNITS:
        assert unit in text[:stop]
    assert "systemctl disable" in text and "pkill -f /usr/bin/unattended-upgrade" in text
    assert '[ "$skyc_waited" -lt 120 ]' in text  # the wait for the dpkg lock is bounded
    if environment:
        assert "TPU_ACCELERATOR_TYPE=v4-8" in text


_STUB = """#!/bin/bash
echo "$(basename "$0") $*" >> {log}
{body}
"""


def _sandbox(root: Path, stubs: dict[str, str]) -> Path:
    """A PATH directory: the real tools the bootstrap needs, and the stand-ins."""
    bin_dir = root / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "install", "getent", "cut", "id", "chown", "useradd", "sleep",
                 "grep", "basename", "rm"):
        real = shutil.which(tool)
        assert real is not None, tool
        (bin_dir / tool).symlink_to(real)
    for name, body in stubs.items():
        stub = bin_dir / name
        stub.write_text(_STUB.format(log=root / "calls.log", body=body))
        stub.chmod(0o755)
    return bin_dir


@pytest.fixture
def node_user() -> Iterator[str]:
    if os.geteuid() != 0 or shutil.which("useradd") is None:
        pytest.skip("needs root and useradd: the bootstrap makes its user")
    user = f"skb{os.getpid() % 100000}"
    try:
        yield user
    finally:
        subprocess.run(["userdel", "-r", "-f", user], capture_output=True)


def _run(script: str, bin_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(bin_dir / "bash"), "-c", script], capture_output=True,
                          text=True, timeout=60, env={"PATH": str(bin_dir)})


def test_the_bootstrap_runs_on_an_ubuntu_image_and_on_a_bare_one(
        tmp_path: Path, node_user: str) -> None:
    script = render("node_bootstrap.sh.j2", cluster="c-1", ssh_user=node_user)
    # An Ubuntu image whose units cannot be stopped (systemctl fails: no systemd
    # running), with the dpkg lock held at first.
    ubuntu = tmp_path / "ubuntu"
    ubuntu.mkdir()
    busy = ubuntu / "busy"
    busy.touch()
    bin_dir = _sandbox(ubuntu, {
        "systemctl": 'echo "System has not been booted with systemd" >&2; exit 1',
        "fuser": f'[ -e {busy} ] && {{ rm {busy}; exit 0; }}; exit 1',
        "apt-get": "exit 0", "dpkg": "exit 0", "pkill": "exit 1",
        "python3": "exit 0"})
    done = _run(script, bin_dir)
    assert done.returncode == 0, done.stderr
    calls = (ubuntu / "calls.log").read_text().splitlines()
    for unit in UNITS:
        assert f"systemctl stop {unit}" in calls and f"systemctl disable {unit}" in calls
    assert "pkill -f /usr/bin/unattended-upgrade" in calls
    assert sum(c.startswith("fuser ") for c in calls) >= 3  # busy, free, free again
    assert "dpkg --configure -a" in calls
    home = Path(subprocess.run(["getent", "passwd", node_user], capture_output=True,
                               text=True, check=True).stdout.split(":")[5])
    marker = home / READY_MARKER
    assert marker.is_file() and marker.stat().st_uid == _uid(node_user)
    assert (home / ".skyc" / "cluster").read_text() == "c-1\n"
    # A bare image: no apt, no systemd, no pkill or fuser (python3 is there).
    marker.unlink()
    bare = tmp_path / "bare"
    bare.mkdir()
    done = _run(script, _sandbox(bare, {"python3": "exit 0"}))
    assert done.returncode == 0, done.stderr
    assert marker.is_file()
    assert not (bare / "calls.log").exists()  # nothing was there to stop or wait for


def _uid(user: str) -> int:
    import pwd

    return pwd.getpwnam(user).pw_uid


def test_a_task_with_buckets_gets_rclone_and_fuse3_and_boots_when_they_fail(
        tmp_path: Path, node_user: str) -> None:
    script = render("node_bootstrap.sh.j2", cluster="c-1", ssh_user=node_user,
                    bucket_tools=True)
    assert "rclone" not in render("node_bootstrap.sh.j2", cluster="c-1", ssh_user=node_user)
    for name, apt in (("ok", "exit 0"), ("failing", 'echo "E: no network" >&2; exit 100')):
        root = tmp_path / name
        root.mkdir()
        bin_dir = _sandbox(root, {"apt-get": apt, "python3": "exit 0", "fuser": "exit 1",
                                  "systemctl": "exit 0", "dpkg": "exit 0", "pkill": "exit 1"})
        done = _run(script, bin_dir)
        assert done.returncode == 0, done.stderr
        calls = (root / "calls.log").read_text().splitlines()
        assert "apt-get install -y rclone fuse3" in calls or name == "failing", calls
        if name == "failing":
            assert "skyc: could not install rclone and fuse3" in done.stderr
        home = Path(subprocess.run(["getent", "passwd", node_user], capture_output=True,
                                   text=True, check=True).stdout.split(":")[5])
        assert (home / READY_MARKER).is_file()  # the node boots either way
        (home / READY_MARKER).unlink()
