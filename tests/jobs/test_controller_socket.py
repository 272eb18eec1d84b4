"""The managed-jobs controller's socket (real Unix sockets in a temporary SKYC_HOME):
0600 in a 0700 directory, reachable at a path longer than a sockaddr_un holds, and a
request that gets no answer is an OSError the launcher retries on."""

from __future__ import annotations

import stat
import threading
from pathlib import Path

import pytest

from skyc.jobs import handoff


def _serve_once(server: object, answer: dict[str, object]) -> threading.Thread:
    def run() -> None:
        conn, _ = server.accept()  # type: ignore[attr-defined]
        with conn:
            assert handoff.same_user(conn)
            seen.append(handoff.read_line(conn))
            handoff.write_line(conn, answer)

    seen: list[dict[str, object]] = []
    thread = threading.Thread(target=run, daemon=True)
    thread.seen = seen  # type: ignore[attr-defined]
    thread.start()
    return thread


@pytest.mark.parametrize("depth", [0, 4])
def test_a_request_reaches_the_socket_even_at_a_long_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, depth: int) -> None:
    home = tmp_path.joinpath("h", *["a-rather-long-directory-name"] * depth)
    monkeypatch.setenv("SKYC_HOME", str(home))
    path = handoff.socket_path()
    assert len(str(path)) > 108 if depth else len(str(path)) < 100
    server = handoff.listen(path)
    server.setblocking(True)
    try:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        thread = _serve_once(server, {"ok": True, "pid": 4242})
        assert handoff.ping() == 4242
        thread.join(timeout=5)
        assert thread.seen == [{"op": "ping"}]  # type: ignore[attr-defined]
    finally:
        server.close()


def test_no_controller_is_an_oserror_and_ping_says_none(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKYC_HOME", str(tmp_path / "home"))
    with pytest.raises(OSError):
        handoff.request({"op": "ping"}, timeout=1)
    assert handoff.ping() is None
    # A stale socket file left by a dead controller answers nothing either.
    handoff.listen(handoff.socket_path()).close()
    assert handoff.socket_path().exists() and handoff.ping() is None
