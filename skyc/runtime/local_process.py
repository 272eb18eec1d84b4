"""A child process with asyncio pipes, started and reaped without asyncio's subprocess layer.

``asyncio.create_subprocess_exec`` can hang the event loop when it is cancelled while it
connects the pipes (CPython gh-125502): ``asyncio.run`` then waits forever on a Ctrl-C.
Here the process starts with a plain ``subprocess.Popen`` (a few milliseconds, nothing to
cancel), its pipes are attached to the loop, and its exit is seen through a pidfd (a
daemon thread where there is none), so every step can be cancelled at any moment.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Mapping
from pathlib import Path

PIPE_LIMIT = 1 << 20


class LocalProcess:
    """``bash -c command`` in its own session, with stream reader/writer pipes."""

    def __init__(self, popen: subprocess.Popen[bytes]) -> None:
        self.popen = popen
        self.pid = popen.pid
        self.stdout = asyncio.StreamReader(limit=PIPE_LIMIT)
        self.stderr = asyncio.StreamReader(limit=PIPE_LIMIT)
        self.stdin: asyncio.StreamWriter | None = None
        self._transports: list[asyncio.BaseTransport] = []
        self._exited: asyncio.Future[int] | None = None

    @classmethod
    async def start(cls, command: str, cwd: Path, env: Mapping[str, str]) -> LocalProcess:
        from skyc.settings.home import USER_UMASK_ENV, user_umask

        # The agent keeps skyc's private umask for its own files (logs); it starts the
        # user's commands with the user's umask, given here.
        popen = subprocess.Popen(
            ["bash", "-c", command], cwd=cwd,
            env={**env, USER_UMASK_ENV: f"{user_umask():03o}"}, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        proc = cls(popen)
        try:
            await proc._attach()
        except BaseException:
            proc.kill()
            proc.close_pipes()
            raise
        return proc

    async def _attach(self) -> None:
        loop = asyncio.get_running_loop()
        self._exited = loop.create_future()
        self._watch_exit(loop)
        assert self.popen.stdout and self.popen.stderr and self.popen.stdin
        for reader, pipe in ((self.stdout, self.popen.stdout), (self.stderr, self.popen.stderr)):
            transport, _ = await loop.connect_read_pipe(
                lambda r=reader: asyncio.StreamReaderProtocol(r), pipe)  # type: ignore[misc]
            self._transports.append(transport)
        protocol = asyncio.StreamReaderProtocol(asyncio.StreamReader())
        wtransport, _ = await loop.connect_write_pipe(lambda: protocol, self.popen.stdin)
        self._transports.append(wtransport)
        self.stdin = asyncio.StreamWriter(wtransport, protocol, None, loop)

    def _watch_exit(self, loop: asyncio.AbstractEventLoop) -> None:
        exited = self._exited
        assert exited is not None

        def reaped(code: int) -> None:
            if not exited.done():
                exited.set_result(code)

        pidfd_open = getattr(os, "pidfd_open", None)
        if pidfd_open is not None:
            with contextlib.suppress(OSError):
                fd = pidfd_open(self.pid)

                def readable() -> None:
                    loop.remove_reader(fd)
                    os.close(fd)
                    reaped(self.popen.wait())

                loop.add_reader(fd, readable)
                return

        def wait() -> None:
            code = self.popen.wait()
            with contextlib.suppress(RuntimeError):  # the loop is closed
                loop.call_soon_threadsafe(reaped, code)

        threading.Thread(target=wait, daemon=True, name=f"wait-{self.pid}").start()

    async def wait(self) -> int:
        assert self._exited is not None
        code = await asyncio.shield(self._exited)
        return code if code >= 0 else 128 - code

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)

    def close_stdin(self) -> None:
        if self.stdin is not None:
            with contextlib.suppress(Exception):
                self.stdin.close()

    def close_pipes(self) -> None:
        for transport in self._transports:
            transport.close()
        for pipe in (self.popen.stdin, self.popen.stdout, self.popen.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()

    async def end(self) -> None:
        """Kill the process group, close the pipes and reap the process (bounded)."""
        self.kill()
        self.close_pipes()
        if self._exited is not None:
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(self._exited), 5)
