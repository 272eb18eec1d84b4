"""Real OpenSSH servers on loopback addresses, one Unix user (own home) per node.

Each node gets its own ``sshd -D`` with its own config, host key and pid file,
listening on 127.0.0.<2+i>. Each node user may use ``sudo`` without a password (as a
cloud VM's user can; mounting a bucket needs root), through a file in /etc/sudoers.d/.
Nodes named in ``held`` get everything but a running sshd (a machine still booting):
:meth:`SshdCluster.launch` starts it later, or never.
Needs root (useradd, sshd) and /usr/sbin/sshd; tests skip with a reason otherwise.
Everything is removed at teardown: what is mounted under the node users' homes, the
sshd processes and every process of the node users (ended by pid), then the users and
their sudoers files.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from skyc.model.nodes import ClusterInfo, Node

SSHD = "/usr/sbin/sshd"
SUDOERS_DIR = Path("/etc/sudoers.d")


def sshd_unavailable() -> str | None:
    if os.geteuid() != 0:
        return "needs root: creates Unix users and runs sshd"
    if not Path(SSHD).exists():
        return f"{SSHD} is not installed (Debian package openssh-server)"
    if shutil.which("ssh-keygen") is None or shutil.which("useradd") is None:
        return "needs ssh-keygen and useradd"
    return None


def add_user(user: str, home: Path) -> None:
    """``useradd``, again while another test process holds /etc/passwd's lock (the
    suite runs in two processes)."""
    for _ in range(50):
        done = subprocess.run(["useradd", "-m", "-d", str(home), "-s", "/bin/bash", user],
                              capture_output=True, text=True, check=False)
        if done.returncode == 0:
            return
        if "lock" not in done.stderr:
            break
        time.sleep(0.2)
    raise RuntimeError(f"useradd {user}: {done.stderr.strip()}")


def allow_sudo(user: str) -> Path:
    """Passwordless sudo for ``user``; the file to remove at teardown."""
    path = SUDOERS_DIR / f"skyc-test-{user}"
    SUDOERS_DIR.mkdir(mode=0o750, exist_ok=True)
    path.write_text(f"{user} ALL=(ALL) NOPASSWD: ALL\n")
    os.chmod(path, 0o440)
    return path


def unmount_under(home: Path) -> None:
    """Lazily unmount whatever is mounted under ``home`` (a node user's bucket mounts,
    made as root through sudo: ending the user's processes leaves them)."""
    prefix = f"{home}/"
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split(" ")[4].replace("\\040", " ")
        if point.startswith(prefix):
            subprocess.run(["umount", "-l", point], capture_output=True, check=False)


def _free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        port: int = s.getsockname()[1]
        return port


def _pids_of_user(uid: int) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.stat(f"/proc/{entry}").st_uid == uid:
                pids.append(int(entry))
        except OSError:
            continue
    return pids


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == pid:
            found.append(int(entry))
    return found


def _kill(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@dataclass
class SshNode:
    index: int
    host: str
    port: int
    user: str
    home: Path
    uid: int
    config: Path
    host_key: Path
    proc: subprocess.Popen[bytes] | None = None


class SshdCluster:
    """N sshd nodes plus a client key in a cluster workspace."""

    def __init__(self, root: Path, count: int, home_root: Path = Path("/home"), *,
                 held: Collection[int] = ()) -> None:
        self.root = root
        self.held = frozenset(held)  # indexes of the nodes whose sshd start() leaves off
        self.home_root = home_root
        self.workspace = root / "workspace"
        self.workspace.mkdir(parents=True, exist_ok=True)
        self.nodes: list[SshNode] = []
        self.count = count
        self.tag = f"sk{os.getpid() % 100000}"

    def start(self) -> SshdCluster:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        key = self.workspace / "id_ed25519"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)],
                       check=True)
        pub = key.with_suffix(".pub").read_text()
        for i in range(self.count):
            host = f"127.0.0.{2 + i}"
            user = f"{self.tag}n{i}"
            home = self.home_root / user
            add_user(user, home)
            subprocess.run(["usermod", "-p", "*", user], check=True)
            allow_sudo(user)
            uid = int(subprocess.run(["id", "-u", user], capture_output=True, text=True,
                                     check=True).stdout)
            ssh_dir = home / ".ssh"
            ssh_dir.mkdir(mode=0o700)
            (ssh_dir / "authorized_keys").write_text(pub)
            os.chmod(ssh_dir / "authorized_keys", 0o600)
            shutil.chown(ssh_dir, user, user)
            shutil.chown(ssh_dir / "authorized_keys", user, user)
            node = SshNode(i, host, _free_port(host), user, home, uid,
                           self.root / f"sshd_{i}.conf", self.root / f"host_key_{i}")
            self.nodes.append(node)
            self.new_host_key(node)
            if i not in self.held:
                self._launch(node)
        for node in self.nodes:
            if node.index not in self.held:
                self._wait_listening(node)
        return self

    def launch(self, node: SshNode) -> float:
        """Start a held node's sshd; returns the ``time.monotonic()`` at which it
        listens."""
        self._launch(node)
        self._wait_listening(node, poll=0.005)
        return time.monotonic()

    def launch_later(self, node: SshNode, delay: float) -> LateLaunch:
        """Start a held node's sshd ``delay`` s from now, in a thread (see LateLaunch)."""
        late = LateLaunch(self, node, delay)
        late.start()
        return late

    def new_host_key(self, node: SshNode) -> None:
        for path in (node.host_key, node.host_key.with_suffix(".pub")):
            path.unlink(missing_ok=True)
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f",
                        str(node.host_key)], check=True)
        node.config.write_text("\n".join([
            f"ListenAddress {node.host}:{node.port}",
            f"HostKey {node.host_key}",
            f"PidFile {self.root}/sshd_{node.index}.pid",
            "UsePAM no",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "PermitRootLogin no",
            f"AllowUsers {node.user}",
            "AuthorizedKeysFile .ssh/authorized_keys",
            "Subsystem sftp internal-sftp",
            "MaxSessions 64",
            "MaxStartups 64",
            "LogLevel ERROR",
            "",
        ]))

    def _launch(self, node: SshNode) -> None:
        node.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(node.config)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def _wait_listening(self, node: SshNode, poll: float = 0.05) -> None:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex((node.host, node.port)) == 0:
                    return
            time.sleep(poll)
        raise RuntimeError(f"sshd on {node.host}:{node.port} did not start")

    def restart(self, node: SshNode) -> None:
        self.stop_listener(node)
        self._launch(node)
        self._wait_listening(node)

    def stop_listener(self, node: SshNode) -> None:
        if node.proc is not None and node.proc.poll() is None:
            node.proc.kill()
            node.proc.wait()

    def kill_node(self, node: SshNode) -> None:
        """As if the machine died: its sshd, its SSH sessions and its user's processes."""
        listener = node.proc.pid if node.proc else None
        self.stop_listener(node)
        if listener is not None:
            _kill(_children(listener))
        _kill(_pids_of_user(node.uid))

    def cluster_info(self, name: str = "sshc") -> ClusterInfo:
        names = ["head"] + [f"worker{i}" for i in range(1, len(self.nodes))]
        return ClusterInfo(
            name=name, cloud="ssh", workspace=str(self.workspace),
            nodes=[Node(name=names[n.index], rank=n.index, transport="ssh", ip=n.host,
                        host=n.host, port=n.port, user=n.user) for n in self.nodes])

    def stop(self) -> None:
        for node in self.nodes:
            unmount_under(node.home)
            listener = node.proc.pid if node.proc else None
            self.stop_listener(node)
            if listener is not None:
                _kill(_children(listener))
            for _ in range(20):
                pids = _pids_of_user(node.uid)
                if not pids:
                    break
                _kill(pids)
                time.sleep(0.05)
            subprocess.run(["userdel", "-r", "-f", node.user], capture_output=True)
            (SUDOERS_DIR / f"skyc-test-{node.user}").unlink(missing_ok=True)


class LateLaunch(threading.Thread):
    """Starts a held node's sshd after a delay; ``listening`` is when it listened (a
    ``time.monotonic()`` value, set once :meth:`join` returns)."""

    def __init__(self, cluster: SshdCluster, node: SshNode, delay: float) -> None:
        super().__init__(daemon=True)
        self.cluster, self.node, self.delay = cluster, node, delay
        self.cancelled = threading.Event()
        self.listening: float | None = None

    def run(self) -> None:
        if not self.cancelled.wait(self.delay):
            self.listening = self.cluster.launch(self.node)

    def cancel(self) -> None:
        self.cancelled.set()


def sshd_cluster(root: Path, count: int, *, held: Collection[int] = ()) -> Iterator[SshdCluster]:
    """Body of a pytest fixture: yields a started cluster and tears it down (``held``:
    the nodes whose sshd is left for the test to start, see SshdCluster)."""
    reason = sshd_unavailable()
    if reason:
        pytest.skip(reason)
    cluster = SshdCluster(root, count, held=held)
    try:
        yield cluster.start()
    finally:
        cluster.stop()
