"""Per-cluster locks: one skyc process at a time changes a cluster.

With the embedded sqlite state: ``fcntl.flock`` on ``$SKYC_HOME/locks/<name>.lock``.
The holder writes its pid and command line into the file so that a waiting process
can say who holds it. The kernel drops the lock when the holder exits, even if it
crashed. With a team's PostgreSQL state (:func:`skyc.settings.state_url.state_url`):
an advisory lock in that database, on a connection of the holder's own, with the
holder (owner, host, pid, command, since) in a table beside it
(:mod:`skyc.state.pg_locks`); the server drops it when that connection dies, so the
lock holds across every machine that shares the state. Either way the lock is not
re-entrant: taking it twice in one process waits for itself.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from skyc.errors import LockTimeout, StateError

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_POLL_S = 0.05


def lock_path(name: str) -> Path:
    """Where the lock file of cluster ``name`` lives."""
    from skyc.settings.home import skyc_home

    if not _NAME.match(name):
        raise StateError(
            f"invalid cluster name {name!r} for a lock: use letters, digits, '.', '_' and '-'"
        )
    return skyc_home() / "locks" / f"{name}.lock"


def _state_url() -> str | None:
    from skyc.settings.state_url import state_url

    return state_url()


def read_holder(path: Path) -> dict[str, Any] | None:
    """The pid/command record in a lock file, or None if there is none. With a
    PostgreSQL state, the record of the holder of that lock (``path`` from
    :func:`lock_path`) in the database, with ``who``, ``host`` and ``mode`` too; None
    when it is free or the database cannot be asked."""
    url = _state_url()
    if url is not None and path.suffix == ".lock":
        from skyc.state import pg_locks

        try:
            holders = pg_locks.read_holders(url, path.stem)
        except StateError:
            return None
        return pg_locks.holder_record(holders[0]) if holders else None
    try:
        data = json.loads(path.read_text() or "null")
    except (OSError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def _describe(holder: dict[str, Any] | None) -> str:
    if not holder:
        return "another skyc process"
    return f"pid {holder.get('pid')} ({holder.get('command', '?')})"


def _command_summary(argv: list[str]) -> str:
    """The program and its first plain arguments; never option values (they may be secrets)."""
    if not argv:
        return "python"
    words = [Path(argv[0]).name or "python"]
    skip_next = False
    for arg in argv[1:]:
        if skip_next or "=" in arg:
            skip_next = False
            continue
        if arg.startswith("-"):
            skip_next = True  # the option's value, if it has one
            continue
        words.append(arg)
        if len(words) == 4:
            break
    return " ".join(words)


def _try_lock(fd: int, shared: bool = False) -> bool:
    try:
        fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def lock_held(name: str) -> bool:
    """Whether a process holds cluster ``name``'s lock exclusively now (an apply or a
    destroy at work). Creates nothing."""
    url = _state_url()
    if url is not None:
        from skyc.state import pg_locks

        lock_path(name)  # the name's check
        return pg_locks.lock_held(url, name)
    try:
        fd = os.open(lock_path(name), os.O_RDONLY)
    except OSError:
        return False
    try:
        return not _try_lock(fd, shared=True)
    finally:
        os.close(fd)


def _open_lock(path: Path) -> tuple[int, bool]:
    """The lock file's descriptor (the file made 0600 when new), and whether the
    holder's record can be written into it: an existing lock file on a read-only
    ``SKYC_HOME`` is still locked, read-only."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o600), True
    except OSError as exc:
        if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM) and path.is_file():
            return os.open(path, os.O_RDONLY), False
        raise StateError(
            f"cannot create the lock file {exc.filename or path}: {exc.strerror or exc}",
            hint=f"this command needs a writable SKYC_HOME with free space ({path.parent})",
        ) from None


@contextlib.contextmanager
def cluster_lock(
    name: str,
    *,
    timeout: float,
    on_wait: Callable[[str], None] | None = None,
    shared: bool = False,
) -> Iterator[Path]:
    """Hold cluster ``name``'s lock for the ``with`` body; yields the lock file's path
    (with a PostgreSQL state, the path a file lock would have: nothing is made there).

    If another process holds it, call ``on_wait`` once with a message naming the
    holder, then wait up to ``timeout`` seconds; raise :class:`LockTimeout` after.
    ``shared``: many holders at once (jobs starting), none while an exclusive holder
    (apply, destroy) has it. On a file, a shared holder does not write its record, nor
    does a holder whose ``SKYC_HOME`` is read-only; in PostgreSQL every holder has its
    record. A lock file that cannot be created, or a state database that cannot be
    reached, is a :class:`StateError` naming it.
    """
    path = lock_path(name)
    url = _state_url()
    if url is not None:
        from skyc.state.pg_locks import pg_cluster_lock

        with pg_cluster_lock(url, name, timeout=timeout, on_wait=on_wait, shared=shared,
                             command=_command_summary(sys.argv)):
            yield path
        return
    with _file_lock(path, name, timeout=timeout, on_wait=on_wait, shared=shared):
        yield path


@contextlib.contextmanager
def _file_lock(
    path: Path,
    name: str,
    *,
    timeout: float,
    on_wait: Callable[[str], None] | None,
    shared: bool,
) -> Iterator[None]:
    """:func:`cluster_lock` on the file ``path``."""
    fd, writable = _open_lock(path)
    try:
        if not _try_lock(fd, shared):
            _wait_for_file_lock(fd, path, name, timeout, on_wait, shared)
        if shared or not writable:
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
            return
        record = {
            "pid": os.getpid(),
            "command": _command_summary(sys.argv),
            "since": time.time(),
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(record, sort_keys=True).encode(), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _wait_for_file_lock(
    fd: int,
    path: Path,
    name: str,
    timeout: float,
    on_wait: Callable[[str], None] | None,
    shared: bool,
) -> None:
    holder = _describe(read_holder(path))
    if on_wait is not None:
        on_wait(f"cluster '{name}' is locked by {holder}; waiting up to {timeout:g}s")
    deadline = time.monotonic() + timeout
    while not _try_lock(fd, shared):
        if time.monotonic() >= deadline:
            latest = read_holder(path)
            if latest:
                holder = _describe(latest)
            raise LockTimeout(
                f"cluster '{name}' is busy: {holder} holds its lock ({path}); "
                f"gave up after {timeout:g}s",
                hint="wait for that command to finish, then try again",
            )
        time.sleep(_POLL_S)


__all__ = ["cluster_lock", "lock_held", "lock_path", "read_holder"]
