"""Stand-in VMs for cloud instances that cannot exist here, reached through an SSH
proxy command (``aws: {ssh_proxy_command: ...}``).

Moto creates EC2 instances but runs no machine, and their public addresses are not
on loopback (tests may only reach 127.0.0.0/8). So each instance is given a stand-in:
a real OpenSSH ``sshd`` on a loopback address, for the image's login user (``ubuntu``),
started before the test. skyc connects to an instance's address through the proxy
command ``python3 ssh_proxy.py STATE_DIR %h %p``, which

- maps the address to a stand-in: the first unseen address takes the next stand-in
  not yet given out (kept in ``STATE_DIR/map.json`` under a lock, so every later
  connection to that address reaches the same one);
- on that first mapping does what cloud-init does on a fresh EC2 instance: asks the
  EC2 API (``STATE_DIR/cloud.json``: endpoint and regions) for the instance with that
  public IP and installs its key pair's public key for the login user;
- then forwards bytes between its stdin/stdout and the stand-in's sshd, like
  ``nc`` or ``ssh -W``.

A stand-in is "terminated" with its instance: its sshd, its sessions and every
process of the login user are killed and its home is wiped, as a VM takes its
processes and its disk with it. Needs root (useradd, sshd); see :func:`unavailable`.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

MAP_FILE = "map.json"
NODES_FILE = "nodes.json"
CLOUD_FILE = "cloud.json"
LOCK_FILE = "lock"


# -- the proxy command (runs as its own process, stdlib and boto3 only) --------------


def _install_key(state: Path, address: str) -> None:
    """cloud-init's part: the key pair of the instance at ``address``, for its user."""
    cloud_file = state / CLOUD_FILE
    if not cloud_file.exists():
        return
    cloud = json.loads(cloud_file.read_text())
    import boto3

    for region in cloud["regions"]:
        ec2 = boto3.client("ec2", region_name=region, endpoint_url=cloud["endpoint_url"],
                           aws_access_key_id="testing", aws_secret_access_key="testing")
        found = [i for r in ec2.describe_instances(
                     Filters=[{"Name": "ip-address", "Values": [address]}])["Reservations"]
                 for i in r["Instances"] if i.get("KeyName")]
        if not found:
            continue
        pairs = ec2.describe_key_pairs(KeyNames=[found[0]["KeyName"]],
                                       IncludePublicKey=True)["KeyPairs"]
        keys = Path(cloud["authorized_keys"])
        with keys.open("a") as fh:
            fh.write(pairs[0]["PublicKey"].strip() + "\n")
        shutil.chown(keys, cloud["user"], cloud["user"])
        keys.chmod(0o600)
        # ... and skyc's bootstrap's last act (the instance's user data): its marker.
        ready = keys.parent.parent / ".skyc" / "ready"
        ready.parent.mkdir(mode=0o700, exist_ok=True)
        ready.touch()
        for path in (ready.parent, ready):
            shutil.chown(path, cloud["user"], cloud["user"])
        return


def stand_in_for(state: Path, address: str) -> tuple[str, int] | None:
    """The stand-in given to ``address`` (the next free one on first sight), or None
    when every stand-in is taken."""
    with (state / LOCK_FILE).open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        nodes = json.loads((state / NODES_FILE).read_text())
        path = state / MAP_FILE
        mapping: dict[str, int] = json.loads(path.read_text()) if path.exists() else {}
        if address not in mapping:
            taken = set(mapping.values())
            free = [i for i in range(len(nodes)) if i not in taken]
            if not free:
                return None
            mapping[address] = free[0]
            path.write_text(json.dumps(mapping, indent=1, sort_keys=True))
            _install_key(state, address)
        node = nodes[mapping[address]]
        return str(node["host"]), int(node["port"])


def forward(sock: socket.socket) -> None:
    """Bytes from stdin to ``sock`` and from ``sock`` to stdout, until the server ends."""
    def upstream() -> None:
        with contextlib.suppress(OSError):
            while data := os.read(0, 65536):
                sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)

    threading.Thread(target=upstream, daemon=True).start()
    out = sys.stdout.buffer
    with contextlib.suppress(OSError):
        while data := sock.recv(65536):
            out.write(data)
            out.flush()


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        sys.stderr.write("usage: ssh_proxy.py STATE_DIR HOST PORT\n")
        return 2
    state, address = Path(argv[0]), argv[1]
    target = stand_in_for(state, address)
    if target is None:
        sys.stderr.write(f"ssh_proxy: no stand-in left for {address}\n")
        return 1
    try:
        sock = socket.create_connection(target, timeout=5)
    except OSError as exc:
        sys.stderr.write(f"ssh_proxy: {address} -> {target[0]}:{target[1]}: {exc}\n")
        return 1
    sock.settimeout(None)
    forward(sock)
    return 0


# -- the stand-ins (the test's side) ------------------------------------------------


def _wait_listening(host: str, port: int, timeout: float = 10.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex((host, port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"sshd on {host}:{port} did not start")


def user_exists(user: str) -> bool:
    return subprocess.run(["id", "-u", user], capture_output=True).returncode == 0


def unavailable() -> str | None:
    from tests.support.sshd import sshd_unavailable

    return sshd_unavailable()


@dataclass
class StandIn:
    index: int
    host: str
    port: int
    config: Path
    host_key: Path
    proc: subprocess.Popen[bytes] | None = None


class StandIns:
    """``count`` sshd stand-ins for the login user ``user``, and the proxy's state."""

    def __init__(self, root: Path, count: int, user: str = "ubuntu") -> None:
        self.root = root
        self.state = root / "proxy"
        self.count = count
        self.user = user
        self.home = Path("/home") / user
        self.made_user = False
        self.nodes: list[StandIn] = []

    def proxy_command(self) -> str:
        """The ``ssh_proxy_command`` that reaches these stand-ins."""
        return f"{sys.executable} {Path(__file__).resolve()} {self.state} %h %p"

    def tell_cloud(self, endpoint_url: str, regions: list[str]) -> None:
        """Where the proxy looks up an instance's key pair (its cloud-init's part)."""
        (self.state / CLOUD_FILE).write_text(json.dumps({
            "endpoint_url": endpoint_url, "regions": regions, "user": self.user,
            "authorized_keys": str(self.home / ".ssh" / "authorized_keys")}))

    def mapping(self) -> dict[str, int]:
        path = self.state / MAP_FILE
        return dict(json.loads(path.read_text())) if path.exists() else {}

    def start(self) -> StandIns:
        from tests.support.sshd import SSHD, _free_port

        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        self.state.mkdir(parents=True, exist_ok=True)
        if user_exists(self.user):  # its home is wiped on every termination: not ours
            raise RuntimeError(f"user {self.user} exists already; stand-ins need their own")
        from tests.support.sshd import add_user  # not at the top: the proxy process

        add_user(self.user, self.home)
        self.made_user = True
        subprocess.run(["usermod", "-p", "*", self.user], check=True)
        self._fresh_home()
        for i in range(self.count):
            host = f"127.0.0.{20 + i}"
            node = StandIn(i, host, _free_port(host), self.root / f"sshd_{i}.conf",
                           self.root / f"host_key_{i}")
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f",
                            str(node.host_key)], check=True)
            node.config.write_text("\n".join([
                f"ListenAddress {node.host}:{node.port}", f"HostKey {node.host_key}",
                f"PidFile {self.root}/sshd_{i}.pid", "UsePAM no",
                "PasswordAuthentication no", "KbdInteractiveAuthentication no",
                "PermitRootLogin no", f"AllowUsers {self.user}",
                "AuthorizedKeysFile .ssh/authorized_keys", "Subsystem sftp internal-sftp",
                "MaxSessions 64", "MaxStartups 64", "LogLevel ERROR", ""]))
            node.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(node.config)],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.nodes.append(node)
        for node in self.nodes:
            _wait_listening(node.host, node.port)
        (self.state / NODES_FILE).write_text(json.dumps(
            [{"host": n.host, "port": n.port} for n in self.nodes]))
        return self

    def _uid(self) -> int:
        return int(subprocess.run(["id", "-u", self.user], capture_output=True, text=True,
                                  check=True).stdout)

    def _fresh_home(self) -> None:
        """An empty home with an empty ``.ssh``, as on a new VM before cloud-init."""
        for entry in self.home.iterdir():
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
        ssh_dir = self.home / ".ssh"
        ssh_dir.mkdir(mode=0o700)
        (ssh_dir / "authorized_keys").touch(mode=0o600)
        for path in (ssh_dir, ssh_dir / "authorized_keys"):
            shutil.chown(path, self.user, self.user)

    def terminate(self, index: int) -> None:
        """As its instance was terminated: sshd, sessions and the user's processes
        killed, the disk gone (the home wiped)."""
        from tests.support.sshd import _children, _kill, _pids_of_user

        node = self.nodes[index]
        if node.proc is not None and node.proc.poll() is None:
            listener = node.proc.pid
            node.proc.kill()
            node.proc.wait()
            _kill(_children(listener))
        for _ in range(20):
            pids = _pids_of_user(self._uid())
            if not pids:
                break
            _kill(pids)
            threading.Event().wait(0.05)
        self._fresh_home()

    def stop(self) -> None:
        if not self.made_user:
            return
        for node in self.nodes:
            self.terminate(node.index)
        subprocess.run(["userdel", "-r", "-f", self.user], capture_output=True)


def stand_ins(root: Path, count: int, user: str = "ubuntu") -> Iterator[StandIns]:
    """Body of a pytest fixture: yields started stand-ins and removes them after."""
    import pytest

    reason = unavailable() or (
        f"a user named {user} exists on this machine (stand-ins wipe their user's home)"
        if user_exists(user) else None)
    if reason:
        pytest.skip(reason)
    nodes = StandIns(root, count, user)
    try:
        yield nodes.start()
    finally:
        nodes.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
