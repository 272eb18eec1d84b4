"""``skyc apply`` on an SSH pool (``infra: ssh/lab``) of two real sshd nodes on loopback.

Each node is its own Unix user (own home) behind its own OpenSSH sshd on
127.0.0.2 / 127.0.0.3 (tests/support/sshd.py); skips when not root.
"""

from __future__ import annotations

import pwd
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import Skyc, files_containing
from tests.support.sshd import SshdCluster, sshd_cluster

SECRET = "abc123"


@pytest.fixture
def pool(tmp_path: Path) -> Iterator[SshdCluster]:
    yield from sshd_cluster(tmp_path / "sshd", 2)


def test_apply_on_ssh_pool_runs_on_both_hosts_and_destroy_leaves_them(
    skyc: Skyc, pool: SshdCluster
) -> None:
    hosts = [f"{n.user}@{n.host}:{n.port}" for n in pool.nodes]
    skyc.home.mkdir(parents=True, exist_ok=True)
    (skyc.home / "config.yaml").write_text(yaml.safe_dump({"ssh_pools": {"lab": {
        "hosts": hosts, "identity_file": str(pool.workspace / "id_ed25519"),
    }}}))
    skyc.write("workdir/data.txt", "from the workdir\n")
    skyc.write("task.yaml", """\
name: lab-job
num_nodes: 2
workdir: workdir
resources:
  infra: ssh/lab
run: |
  echo "rank=$SKYPILOT_NODE_RANK user=$(whoami) ips=$(echo "$SKYPILOT_NODE_IPS" | paste -sd,)"
  echo "data: $(cat data.txt) token: ${#TOKEN} chars"
secrets:
  TOKEN: null
""")
    result = skyc.ok("apply", "task.yaml", "--yes", "--secret", f"TOKEN={SECRET}", timeout=120)

    a, b = pool.nodes
    ips = f"{a.host},{b.host}"
    assert f"(head, rank=0) rank=0 user={a.user} ips={ips}" in result.stdout, str(result)
    assert f"(worker1, rank=1, ip={b.host}) rank=1 user={b.user} ips={ips}" in result.stdout
    assert result.stdout.count(f"data: from the workdir token: {len(SECRET)} chars") == 2
    assert SECRET not in result.output
    for root in (skyc.home, *(n.home for n in pool.nodes)):
        assert files_containing(root, SECRET.encode()) == [], root
    assert (b.home / "sky_workdir" / "data.txt").read_text() == "from the workdir\n"
    assert skyc.clusters() == ["lab-job"]

    skyc.ok("destroy", "lab-job", "--yes")
    assert skyc.clusters() == []
    assert not (skyc.workspace("lab-job") / "cluster.json").exists()
    # The machines are left alone: users, homes, files and sshd all still there.
    for node in pool.nodes:
        assert pwd.getpwnam(node.user).pw_dir == str(node.home)
        assert (node.home / "sky_workdir" / "data.txt").exists()
        assert node.proc is not None and node.proc.poll() is None
        with socket.create_connection((node.host, node.port), timeout=5) as s:
            assert s.recv(64).startswith(b"SSH-2.0-")
