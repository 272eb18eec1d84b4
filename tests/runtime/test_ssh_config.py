"""`ssh CLUSTER` with OpenSSH's own client against a real sshd on loopback: the config
skyc writes under $SKYC_HOME, the pinned host key, and the opt-in Include line
(written into a temporary HOME, never the user's)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from skyc.runtime.sshconfig import config_path, install_include, write_config
from tests.runtime.test_cli_jobs import save_cluster, skyc
from tests.support.sshd import SshdCluster

pytestmark = pytest.mark.skipif(shutil.which("ssh") is None, reason="no OpenSSH client")


def _ssh(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ssh", "-F", str(config), "-o", "BatchMode=yes", *args],
                          capture_output=True, text=True, timeout=60)


def test_ssh_cluster_reaches_the_head_with_the_pinned_key(sshd2: SshdCluster,
                                                         skyc_home: Path) -> None:
    cluster = sshd2.cluster_info("sshc")
    save_cluster(skyc_home, cluster)
    # skyc's first connection pins each node's host key in the cluster's known_hosts
    out = skyc(skyc_home, "exec", "sshc", "--num-nodes", "2", "true")
    assert out.returncode == 0, out.stderr
    path = write_config(skyc_home)
    assert path == config_path(skyc_home) and oct(path.stat().st_mode & 0o777) == "0o600"
    head, worker = sshd2.nodes
    out = _ssh(path, "sshc", "echo", "on-$(whoami)")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"on-{head.user}"
    out = _ssh(path, "sshc-worker1", "whoami")
    assert out.returncode == 0 and out.stdout.strip() == worker.user, out.stderr
    # another key for the same address is refused: the pin holds
    known = Path(cluster.workspace) / "known_hosts"
    text = known.read_text()
    other = subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f",
                            str(skyc_home / "other")], capture_output=True)
    assert other.returncode == 0
    fake = (skyc_home / "other.pub").read_text().split()[:2]
    known.write_text("\n".join(f"{line.split()[0]} {' '.join(fake)}"
                               for line in text.splitlines()) + "\n")
    out = _ssh(path, "sshc", "true")
    assert out.returncode != 0 and "host key" in out.stderr.lower()


def test_skyc_ssh_runs_a_command(sshd2: SshdCluster, skyc_home: Path) -> None:
    save_cluster(skyc_home, sshd2.cluster_info("sshc"))
    assert skyc(skyc_home, "exec", "sshc", "true").returncode == 0
    out = skyc(skyc_home, "ssh", "sshc", "--", "echo", "via-skyc-ssh")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "via-skyc-ssh"


def test_a_local_cluster_gets_a_shell_in_its_node(local_cluster: object,
                                                 skyc_home: Path) -> None:
    from skyc.model.nodes import ClusterInfo

    assert isinstance(local_cluster, ClusterInfo)
    save_cluster(skyc_home, local_cluster)
    head = next(n for n in local_cluster.nodes if n.rank == 0)
    assert head.node_dir is not None
    gone = skyc(skyc_home, "ssh", "loc", "true")  # its directory was never made
    assert gone.returncode == 1 and "skyc status" in gone.stderr, gone.stderr
    Path(head.node_dir).mkdir(parents=True)
    out = skyc(skyc_home, "ssh", "loc", "echo home=$HOME")
    assert out.returncode == 0 and out.stdout.strip() == f"home={head.node_dir}", out.stderr


def test_install_adds_one_include_line_at_the_top(tmp_path: Path) -> None:
    home = tmp_path / "home"  # a temporary HOME: the real ~/.ssh/config is never touched
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "config").write_text("Host mine\n  HostName example.invalid\n")
    target = tmp_path / "skyc" / "ssh" / "config"
    assert install_include(home, target) is True
    assert install_include(home, target) is False
    lines = (home / ".ssh" / "config").read_text().splitlines()
    assert lines[1] == f"Include {target}" and lines.count(f"Include {target}") == 1
    assert "Host mine" in lines


def test_ssh_config_command_writes_only_under_skyc_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "SKYC_HOME": str(tmp_path / "sk")}
    import sys

    run = [sys.executable, "-m", "skyc", "ssh-config"]
    out = subprocess.run(run, capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "sk" / "ssh" / "config").is_file()
    assert not (home / ".ssh").exists()  # no consent, no change
    out = subprocess.run([*run, "--install"], capture_output=True, text=True, env=env,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert f"Include {tmp_path / 'sk' / 'ssh' / 'config'}" in (home / ".ssh" / "config").read_text()
