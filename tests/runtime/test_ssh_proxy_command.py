"""SSH through a proxy command (``aws: {ssh_proxy_command: ...}``, SkyPilot's setting
for a bastion): the config's forms and checks, the nodes that carry it, the OpenSSH
config entry, and a real connection through a real proxy process to a real sshd on
loopback (tests/support/ssh_proxy.py; skips when not root)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from skyc.errors import ConfigError, TransportError
from skyc.model.nodes import ClusterInfo, Node
from skyc.runtime.ssh import SshTransport, proxy_argv
from skyc.runtime.sshconfig import host_entries
from skyc.settings.config import SkycConfig, load_config
from tests.support.ssh_proxy import StandIns, stand_ins

# Where the node "is": nothing listens there, so only the proxy can reach it.
UNREACHED = "127.0.0.99"


def _node(**extra: object) -> Node:
    base: dict[str, object] = {"name": "head", "rank": 0, "transport": "ssh",
                               "ip": "10.0.0.4", "host": "54.1.2.3", "user": "ubuntu"}
    return Node.model_validate({**base, **extra})


def test_tokens_are_filled_in_word_by_word() -> None:
    node = _node(port=2222, proxy_command="ssh -W %h:%p -l %r 'jump host' 100%%")
    assert proxy_argv(node) == ["ssh", "-W", "54.1.2.3:2222", "-l", "ubuntu", "jump host",
                                "100%"]
    assert proxy_argv(_node()) is None
    with pytest.raises(TransportError, match="cannot be parsed"):
        proxy_argv(_node(proxy_command="ssh 'unclosed"))


@pytest.mark.parametrize("value, words", [
    ("''", "an empty command"), ("\"ssh -W %h:%p 'jump\"", "cannot be split"),
])
def test_a_bad_proxy_command_in_the_config_names_the_field(
        tmp_path: Path, value: str, words: str) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(f"aws:\n  ssh_proxy_command: {value}\n")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert "aws.ssh_proxy_command" in err.value.message and words in err.value.message


def test_aws_nodes_carry_the_proxy_of_their_region(tmp_path: Path) -> None:
    from skyc.compiler import nodes_from_outputs

    outputs = {"private_ips": ["10.0.0.4"], "public_ips": ["54.1.2.3"],
               "ssh_user": "ubuntu"}

    def nodes(setting: object, region: str) -> list[Node]:
        config = SkycConfig.model_validate({"aws": {"ssh_proxy_command": setting}})
        return nodes_from_outputs("aws", "c", outputs, config=config, workspace=tmp_path,
                                  region=region)

    [one] = nodes("ssh -W %h:%p jump", "us-east-1")
    assert one.proxy_command == "ssh -W %h:%p jump"
    per_region = {"us-east-2": "ssh -W %h:%p jump2"}
    assert nodes(per_region, "us-east-2")[0].proxy_command == "ssh -W %h:%p jump2"
    assert nodes(per_region, "us-east-1")[0].proxy_command is None
    assert nodes(None, "us-east-1")[0].proxy_command is None


def test_the_openssh_entry_has_the_proxy_command(tmp_path: Path) -> None:
    info = ClusterInfo(name="c", cloud="aws", workspace=str(tmp_path),
                       nodes=[_node(proxy_command="ssh -W %h:%p jump")])
    [entry] = host_entries(info)
    assert "  ProxyCommand ssh -W %h:%p jump" in entry.splitlines()


@pytest.fixture
def stand_in(tmp_path: Path) -> Iterator[StandIns]:
    yield from stand_ins(tmp_path / "standin", 1, user="skycproxy")


@pytest.mark.slow
def test_a_real_connection_goes_through_the_proxy_command(
        stand_in: StandIns, tmp_path: Path) -> None:
    import subprocess

    workspace = tmp_path / "ws"
    workspace.mkdir()
    key = workspace / "ssh_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)],
                   check=True)
    # The test plays cloud-init: the node's login user accepts the cluster's key.
    keys = stand_in.home / ".ssh" / "authorized_keys"
    keys.write_text(key.with_suffix(".pub").read_text())
    node = _node(host=UNREACHED, user=stand_in.user, identity_file=str(key),
                 proxy_command=stand_in.proxy_command())

    async def whoami(node: Node) -> str:
        transport = SshTransport(node, workspace, connect_timeout=5)
        try:
            await transport.connect(10)
            result = await transport.run("whoami")
            return result.stdout.decode().strip()
        finally:
            await transport.close()

    assert asyncio.run(whoami(node)) == stand_in.user
    assert stand_in.mapping() == {UNREACHED: 0}
    # The host key is pinned under the node's own address, not the stand-in's.
    [pinned] = (workspace / "known_hosts").read_text().splitlines()
    assert pinned.startswith(f"{UNREACHED} ssh-ed25519 ")
    # A proxy command that cannot reach the node is a connection failure, named.
    broken = node.model_copy(update={"proxy_command": "false"})
    with pytest.raises(TransportError, match=r"via its proxy command\): cannot connect over SSH"):
        asyncio.run(whoami(broken))
