"""Reading the logs of a node that is gone waits as long as the caller says, not a
booting node's whole minute: the managed-jobs controller saves a lost run's logs with
a short wait before it recovers."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from skyc.errors import SkycError
from skyc.model.nodes import ClusterInfo, Node
from skyc.runtime import tail_logs


def _closed_port() -> int:
    with socket.socket() as sock:  # bound, then released: nothing listens there
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_tail_of_an_unreachable_node_gives_up_after_the_given_wait(tmp_path: Path) -> None:
    import asyncssh

    key = asyncssh.generate_private_key("ssh-ed25519")
    (tmp_path / "id_ed25519").write_bytes(key.export_private_key())
    node = Node(name="head", rank=0, transport="ssh", ip="127.0.0.1", host="127.0.0.1",
                port=_closed_port(), user="nobody")
    info = ClusterInfo(name="gone", cloud="aws", workspace=str(tmp_path), nodes=[node])
    started = time.monotonic()
    with pytest.raises(SkycError, match="cannot connect over SSH"):
        tail_logs(info, 1, connect_timeout=2.0)
    # the default waits 60 s for a node that may be booting
    assert time.monotonic() - started < 30
