"""Reading an input file's bytes: a regular file only, at most a cap, UTF-8 text.

Every file skyc reads (task, config, policy, env file, catalog, node cache, saved
plan) is read here. A FIFO, a device (``/dev/zero``, ``/dev/urandom``), a socket or
a directory is refused before a byte is read: its target (symlinks followed) is
checked with ``stat``, then the file is opened without blocking and checked again
with ``fstat``, so nothing here can hang or read without end. At most the cap plus
one byte is read. :class:`Bounds` says, per kind of file, how it is named in
errors, how large it may be and which :class:`~skyc.errors.SkycError` it raises.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from skyc.errors import SkycError, SpecProblem, TaskSpecError
from skyc.task.bounds import MAX_VALUES

MIB = 1024 * 1024
MAX_BYTES = 8 * MIB
MAX_BYTES_TEXT = "8 MiB"

# (shown file, problem, line or None) -> the error to raise
ErrorFactory = Callable[[str, str, int | None], SkycError]

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)
_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)


def task_problem(shown: str, message: str, line: int | None) -> SkycError:
    return TaskSpecError([SpecProblem(file=shown, path="", line=line, message=message)])


def plain(cls: type[SkycError], hint: str | None = None) -> ErrorFactory:
    """Errors of ``cls`` reading ``FILE[:LINE]: problem``, with ``hint``."""

    def make(shown: str, message: str, line: int | None) -> SkycError:
        where = shown if line is None else f"{shown}:{line}"
        return cls(f"{where}: {message}", hint=hint)

    return make


class Bounds(NamedTuple):
    """One kind of input file: its name in messages, its cap, the error it raises."""

    noun: str                    # "a task file", as in "is a directory, not a task file"
    advice: str                  # what to give instead of a FIFO, a device or a socket
    error: ErrorFactory
    max_bytes: int = MAX_BYTES
    size_advice: str = ""        # said after "holds at most 8 MiB"
    missing: str = "cannot be read: no such file"
    max_values: int = MAX_VALUES  # of a JSON document (a YAML one: bounds.MAX_VALUES)

    @property
    def cap_text(self) -> str:
        return f"{self.max_bytes // MIB} MiB"

    def fail(self, shown: str, message: str, line: int | None = None) -> SkycError:
        return self.error(shown, message, line)


TASK = Bounds("a task file", "give a task YAML file", task_problem,
              size_advice=" (keep data in files the task mounts)", missing="file not found")


def _kind(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def _refuse_mode(mode: int, shown: str, bounds: Bounds) -> None:
    if stat.S_ISDIR(mode):
        raise bounds.fail(shown, f"is a directory, not {bounds.noun}")
    if not stat.S_ISREG(mode):
        raise bounds.fail(shown, f"is {_kind(mode)}, not a regular file; {bounds.advice}")


def _too_big(shown: str, bounds: Bounds) -> SkycError:
    cap = bounds.cap_text
    return bounds.fail(shown, f"is larger than {cap}; {bounds.noun} holds at most "
                              f"{cap}{bounds.size_advice}")


def _open(path: Path, shown: str, bounds: Bounds) -> int:
    """A descriptor of a regular file (its target, symlinks followed)."""
    try:
        _refuse_mode(os.stat(path).st_mode, shown, bounds)
        return os.open(path, _FLAGS)
    except FileNotFoundError:
        raise bounds.fail(shown, bounds.missing) from None
    except IsADirectoryError:
        raise bounds.fail(shown, f"is a directory, not {bounds.noun}") from None
    except OSError as exc:
        raise bounds.fail(shown, f"cannot be read: {exc.strerror or exc}") from None


def _read_capped(fd: int, cap: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while size <= cap:
        chunk = os.read(fd, min(1 << 20, cap + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def read_bytes(path: Path, shown: str, bounds: Bounds = TASK) -> bytes:
    """The bytes of a regular file of at most ``bounds.max_bytes``; ``bounds``' error
    (a TaskSpecError for a task file) otherwise."""
    fd = _open(path, shown, bounds)
    try:
        info = os.fstat(fd)
        _refuse_mode(info.st_mode, shown, bounds)
        if info.st_size > bounds.max_bytes:
            raise _too_big(shown, bounds)
        data = _read_capped(fd, bounds.max_bytes)
    except OSError as exc:
        raise bounds.fail(shown, f"cannot be read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(data) > bounds.max_bytes:
        raise _too_big(shown, bounds)
    return data


def decode(data: bytes, shown: str, bounds: Bounds = TASK) -> str:
    """``data`` as UTF-8 text; an error naming the first bad byte's offset and line."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise bounds.fail(shown, f"is not UTF-8 text (byte 0x{data[exc.start]:02x} at "
                                 f"offset {exc.start})", line) from None


def read_text(path: Path, shown: str, bounds: Bounds = TASK) -> str:
    """The file's text (see :func:`read_bytes`), which must be UTF-8."""
    return decode(read_bytes(path, shown, bounds), shown, bounds)


def peek(path: Path, size: int) -> bytes | None:
    """The first ``size`` bytes of a regular file; None for anything else (a FIFO, a
    device, a directory, a file that cannot be opened), without blocking."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        fd = os.open(path, _FLAGS)
    except OSError:
        return None
    try:
        return os.read(fd, size) if stat.S_ISREG(os.fstat(fd).st_mode) else None
    except OSError:
        return None
    finally:
        os.close(fd)
