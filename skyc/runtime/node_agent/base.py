"""What every part of the agent stands on: its version and trailer, its files under
``~/.skyc``, the node's token and the job mark, finding a program on the PATH, and the
parsed command line."""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


# ---------------------------------------------------------------- files and marks

VERSION = "1"
EXIT_TRAILER = "__skyc_exit__"
PHASES = ("setup", "run")
MARK_VAR = "SKYC_JOB_MARK"


def skyc_dir() -> str:
    return os.path.join(os.path.expanduser("~"), ".skyc")


def jobs_dir() -> str:
    return os.path.join(skyc_dir(), "jobs")


def job_dir(job_id: int) -> str:
    return os.path.join(jobs_dir(), str(job_id))


def write_atomic(path: str, text: str) -> None:
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)


def read_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except OSError:
        return None


def write_trailer(code: int, cancelled: str | None = None) -> None:
    """The last line on stderr: the exit code, then ``cancelled REASON`` when the job
    was stopped (user, peer or abort)."""
    sys.stdout.flush()
    sys.stderr.write(f"{EXIT_TRAILER} {code}{f' cancelled {cancelled}' if cancelled else ''}\n")
    sys.stderr.flush()


def node_token() -> str:
    """Names this node's jobs among every process of the machine (several local nodes
    may share one machine and one user): a hash of the real path of ``~/.skyc``, kept in
    ``~/.skyc/token`` beside that path, so that a phase's start does not import hashlib."""
    home = os.path.realpath(skyc_dir())
    path = os.path.join(home, "token")
    saved = (read_text(path) or "").split("\n")
    if len(saved) > 1 and saved[0] == home and len(saved[1]) == 16:
        return saved[1]
    import hashlib

    token = hashlib.sha256(home.encode("utf-8")).hexdigest()[:16]
    try:
        os.makedirs(home, exist_ok=True)
        write_atomic(path, f"{home}\n{token}\n")
    except OSError:  # a read-only home: computed each time
        pass
    return token


def job_mark(job_id: int) -> str:
    return f"{node_token()}/{job_id}"


def marked_pids(job_id: int | None) -> list[int]:
    """Processes carrying this node's job mark (of one job, or of any job)."""
    want = (f"{MARK_VAR}={job_mark(job_id)}" if job_id is not None
            else f"{MARK_VAR}={node_token()}/").encode()
    exact = job_id is not None
    found = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as fh:
                entries = fh.read().split(b"\0")
        except OSError:
            continue
        if any((e == want) if exact else e.startswith(want) for e in entries):
            found.append(int(name))
    return found


def cancel_reason(job_id: int) -> str | None:
    text = read_text(os.path.join(job_dir(job_id), "cancelled"))
    return None if text is None else (text.strip() or "user")


def find_program(name: str, env: Mapping[str, str]) -> str | None:
    """Where ``name`` is on the PATH of ``env``, as execvpe finds it (None: nowhere),
    without what execvpe costs: os.get_exec_path imports warnings, and each directory
    of the PATH is tried with an exec."""
    if "/" in name:
        return name
    for d in env.get("PATH", os.defpath).split(os.pathsep):
        path = os.path.join(d or ".", name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


class Args:
    """A parsed command line: one attribute per argument and option."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.__dict__.update(values)

    def __getattr__(self, name: str) -> Any:  # for type checkers: any attribute
        raise AttributeError(name)

