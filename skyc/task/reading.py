"""Reading a task file's text: a regular file only, at most ``MAX_BYTES``, UTF-8.

A FIFO, a device (``/dev/zero``, ``/dev/urandom``), a socket or a directory is
refused before a byte is read: the file is opened without blocking and checked
with ``fstat``, so nothing here can hang or read without end.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from skyc.errors import SpecProblem, TaskSpecError

MAX_BYTES = 8 * 1024 * 1024
MAX_BYTES_TEXT = "8 MiB"

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _fail(shown: str, message: str) -> TaskSpecError:
    return TaskSpecError([SpecProblem(file=shown, path="", message=message)])


def _kind(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def _too_big(shown: str) -> TaskSpecError:
    return _fail(shown, f"is larger than {MAX_BYTES_TEXT}; a task file holds at most "
                        f"{MAX_BYTES_TEXT} (keep data in files the task mounts)")


def read_bytes(path: Path, shown: str) -> bytes:
    """The bytes of a regular file of at most ``MAX_BYTES``; a TaskSpecError otherwise."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise _fail(shown, "file not found") from None
    except IsADirectoryError:
        raise _fail(shown, "is a directory, not a task file") from None
    except OSError as exc:
        raise _fail(shown, f"cannot be read: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise _fail(shown, "is a directory, not a task file")
        if not stat.S_ISREG(mode):
            raise _fail(shown, f"is {_kind(mode)}, not a regular file; give a task YAML file")
        if os.fstat(fd).st_size > MAX_BYTES:
            raise _too_big(shown)
        chunks: list[bytes] = []
        size = 0
        while size <= MAX_BYTES:
            chunk = os.read(fd, min(1 << 20, MAX_BYTES + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise _fail(shown, f"cannot be read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if size > MAX_BYTES:
        raise _too_big(shown)
    return b"".join(chunks)


def read_text(path: Path, shown: str) -> str:
    """The file's text (see :func:`read_bytes`), which must be UTF-8."""
    data = read_bytes(path, shown)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise TaskSpecError([SpecProblem(
            file=shown, path="", line=line,
            message=f"is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})",
        )]) from None
