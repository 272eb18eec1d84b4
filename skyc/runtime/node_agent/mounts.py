"""Buckets on the node (``mounts apply|flush|release|check``), through rclone.

A COPY is copied onto the node's disk. A MOUNT or MOUNT_CACHED is mounted with FUSE by
an rclone process of its own, recorded in ``~/.skyc/mounts/<key>.json`` (mode 0600)
with the port and login of that process's remote-control server, which tells when the
mount's writes have reached the bucket. The buckets' settings and credentials
(``RCLONE_CONFIG_*``) come on stdin and go only into rclone's environment: never onto
the disk, never into a message.
"""

from __future__ import annotations

import os
import sys
import time

from skyc.runtime.node_agent.base import (
    MARK_VAR,
    Args,
    find_program,
    job_dir,
    read_text,
    skyc_dir,
    write_atomic,
)
from skyc.runtime.node_agent.sync import resolve_target

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, BinaryIO


# ---------------------------------------------------------------- buckets

BUCKET_MODES = ("MOUNT", "COPY", "MOUNT_CACHED")
# "writes" keeps what a program writes on the node's disk until the file is closed,
# then uploads it: appending, seeking and reading back (zip files, sqlite) all work,
# where "off" takes sequential writes of new files only. A write-back delay above zero
# queues each upload, so that the remote-control server counts it until it is done
# (at zero rclone uploads while the file is released, which nothing counts). "full"
# keeps what is read on the disk as well. A file is read with one request from where
# a read starts (chunk size 0), not in chunks that double from 128 MiB: a 1 GiB file is
# one request instead of four, and a seek starts a new request either way.
MOUNT_FLAGS = {
    "MOUNT": ("--vfs-cache-mode", "writes", "--vfs-write-back", "100ms",
              "--vfs-read-chunk-size", "0"),
    "MOUNT_CACHED": ("--vfs-cache-mode", "full", "--vfs-write-back", "1s",
                     "--vfs-read-chunk-size", "0"),
}
DIR_CACHE_TIME = "10s"  # how soon a mount sees objects that others wrote
BUCKET_EXIT = 3  # the bucket cannot be used as written: missing, denied, a file
TOOL_EXIT = 4  # rclone, fusermount or the right to use FUSE is missing
FLUSH_TIMEOUT = 1800.0
MOUNT_WAIT = 30.0
RC_LOGIN = ("RCLONE_RC_USER", "RCLONE_RC_PASS")  # in rclone's environment, never its argv


class MountError(Exception):
    """What went wrong, in one line, and the agent's exit code for it."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def mounts_dir() -> str:
    return os.path.join(skyc_dir(), "mounts")


def has_mounts() -> bool:
    """Whether this node has a mount recorded (without reading the records)."""
    try:
        return any(n.endswith(".json") for n in os.listdir(mounts_dir()))
    except OSError:
        return False


def load_mounts() -> list[dict[str, Any]]:
    import json

    d = mounts_dir()
    names = sorted(n for n in os.listdir(d) if n.endswith(".json")) if os.path.isdir(d) else []
    records = []
    for name in names:
        try:
            record = json.loads(read_text(os.path.join(d, name)) or "")
        except ValueError:
            continue
        if isinstance(record, dict) and "key" in record:
            records.append(record)
    return records


def _save_mount(record: dict[str, Any]) -> None:
    import json

    os.makedirs(mounts_dir(), mode=0o700, exist_ok=True)
    path = os.path.join(mounts_dir(), record["key"] + ".json")
    tmp = f"{path}.tmp-{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(record, fh, sort_keys=True)
    os.replace(tmp, path)


def _mount_key(path: str) -> str:
    import hashlib

    return hashlib.sha256(path.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def _unescape(text: str) -> str:
    """A path as /proc/self/mountinfo writes it (space, tab, newline and backslash as
    octal escapes), decoded."""
    out = []
    i = 0
    while i < len(text):
        if text[i] == "\\" and text[i + 1:i + 4].isdigit():
            out.append(chr(int(text[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def mount_table() -> dict[str, tuple[str, str]]:
    """Each mount point of this machine -> (its file system's type, its source)."""
    table = {}
    for line in (read_text("/proc/self/mountinfo") or "").splitlines():
        left, _, right = line.partition(" - ")
        fields, more = left.split(" "), right.split(" ")
        if len(fields) >= 5 and len(more) >= 2:
            table[_unescape(fields[4])] = (more[0], _unescape(more[1]))
    return table


def _run(argv: list[str], env: dict[str, str] | None = None,
         timeout: float | None = None) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of a command; 127 when it cannot start."""
    import subprocess

    try:
        done = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return 124, "", f"{os.path.basename(argv[0])} did not end within {timeout:.0f} s"
    except OSError as exc:
        return 127, "", str(exc)
    return (done.returncode, done.stdout.decode("utf-8", "replace"),
            done.stderr.decode("utf-8", "replace"))


def rclone_reason(text: str) -> str:
    """rclone's error in one line, from what it wrote (its log lines, dated)."""
    lines = []
    for line in text.splitlines():
        words = line.split(" ", 2)
        dated = len(words) == 3 and words[0].count("/") == 2 and words[1].count(":") == 2
        body = (words[2] if dated else line).strip()
        if not body:
            continue
        if dated:
            if body.startswith(("NOTICE:", "INFO ", "DEBUG ")):
                continue
            lines = [body]
        elif lines:
            lines.append(body)  # "caused by: ..." under the error it explains
    reason = "; ".join(lines) or (text.strip().splitlines() or ["no error was written"])[-1]
    for prefix in ("ERROR : ", "CRITICAL: ", "Fatal error: "):
        reason = reason.replace(prefix, "")
    return reason[:400]


def secret_forms(value: str) -> list[str]:
    """How a setting's value may appear in what rclone writes: as it is, and a SAS URL's
    signature (``sig=``), which its request URLs carry, as it is and percent-encoded."""
    forms = [value]
    if "sig=" in value:
        import urllib.parse

        query = urllib.parse.urlsplit(value).query
        for sig in urllib.parse.parse_qs(query).get("sig", []):
            forms += [sig, urllib.parse.quote(sig, safe="")]
    return forms


class Rclone:
    """rclone on this node: its program, the environment it runs in (the buckets'
    settings), its CA file, and how it gets the right to mount."""

    def __init__(self, node: str, settings: dict[str, str]) -> None:
        self.node = node
        self.names = sorted(settings)
        self.secrets = sorted({f for v in settings.values() for f in secret_forms(v)
                               if len(f) >= 4}, key=len, reverse=True)
        env = {k: v for k, v in os.environ.items() if k not in RC_LOGIN and k != MARK_VAR}
        # rclone 1.60 cannot start with AWS_CA_BUNDLE set (LoadCustomCABundleError): the
        # file goes to --ca-cert instead.
        bundle = env.pop("AWS_CA_BUNDLE", "")
        self.ca = ["--ca-cert", bundle] if bundle and os.path.isfile(bundle) else []
        env.update(settings)
        self.env = env
        self.program = find_program("rclone", env)
        self.sudo: list[str] | None = None

    def scrub(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, "***")
        return text

    def argv(self, *args: str) -> list[str]:
        if self.program is None:
            raise MountError(f"rclone is not installed on node {self.node}", TOOL_EXIT)
        return [self.program, *args, "--config", "", *self.ca]

    def stat(self, remote: str, what: str) -> dict[str, Any]:
        """What ``remote`` is (rclone's lsjson entry); MountError when it cannot be read."""
        import json

        code, out, err = _run(self.argv("lsjson", "--stat", "--low-level-retries", "3",
                                        remote), self.env, timeout=300)
        if code == 3:
            raise MountError(f"{what}: the bucket or the path in it does not exist "
                             f"({rclone_reason(err)})", BUCKET_EXIT)
        if code != 0:
            raise MountError(f"{what}: {rclone_reason(err)}", BUCKET_EXIT)
        try:
            info: dict[str, Any] = json.loads(out)
        except ValueError:
            raise MountError(f"{what}: rclone lsjson printed no entry") from None
        return info

    def root_words(self, what: str, why: str) -> list[str]:
        """``sudo -n``, when this user may use it without a password; else MountError."""
        sudo = find_program("sudo", self.env)
        if sudo is None or _run([sudo, "-n", "true"], self.env, timeout=30)[0] != 0:
            import getpass

            raise MountError(f"{what}: {why} needs root or passwordless sudo on node "
                             f"{self.node}, and user {getpass.getuser()} has neither",
                             TOOL_EXIT)
        return [sudo, "-n"]

    def mount_prefix(self, what: str) -> list[str]:
        """[] when this user may use FUSE; else the words that run rclone as root."""
        if self.sudo is None:
            if os.geteuid() == 0 or os.access("/dev/fuse", os.R_OK | os.W_OK):
                self.sudo = []
            else:
                words = self.root_words(what, "mounting (/dev/fuse is not open to this user)")
                self.sudo = [*words, f"--preserve-env={','.join([*self.names, *RC_LOGIN])}"]
        return self.sudo


def _sudo_words(record: dict[str, Any]) -> list[str]:
    sudo = find_program("sudo", os.environ) if record.get("sudo") else None
    return [sudo, "-n"] if sudo else []


def _make_dir(path: str, rc: Rclone, what: str) -> None:
    """``path`` as a directory this user owns (made with sudo where it may not)."""
    try:
        os.makedirs(path, exist_ok=True)
        return
    except PermissionError:
        if os.geteuid() == 0:
            raise
    sudo = rc.root_words(what, f"making {path}")
    for argv in (["mkdir", "-p", path], ["chown", f"{os.getuid()}:{os.getgid()}", path]):
        code, _, err = _run([*sudo, *argv], timeout=30)
        if code != 0:
            raise OSError(f"{' '.join(argv[:2])} {path}: {err.strip()}")


def _rc_stats(record: dict[str, Any], timeout: float = 5.0) -> dict[str, Any]:
    """The mount's ``vfs/stats``, from its remote-control server; OSError when it does
    not answer."""
    import base64
    import json
    import urllib.request

    login = base64.b64encode(f"{record['rc_user']}:{record['rc_pass']}".encode()).decode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{record['rc_port']}/vfs/stats", data=b"{}", method="POST",
        headers={"Authorization": f"Basic {login}", "Content-Type": "application/json"})
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # no http_proxy
    try:
        with direct.open(request, timeout=timeout) as answer:
            stats: dict[str, Any] = json.loads(answer.read())
    except ValueError as exc:
        raise OSError(f"its remote control answered: {exc}") from None
    return stats


def mount_problem(record: dict[str, Any]) -> str | None:
    """Why a recorded mount is not live (None: it is)."""
    where = f"the mount of {record['remote']} at {record['target']}"
    if record["path"] not in mount_table():
        return f"{where} is gone (not mounted any more; rclone's log: {record['log']})"
    try:
        _rc_stats(record, timeout=3.0)
    except OSError as exc:
        return (f"{where} is gone (its rclone does not answer: {exc}; "
                f"rclone's log: {record['log']})")
    return None


def _pending(stats: dict[str, Any]) -> int:
    cache = stats.get("diskCache") or {}
    return int(cache.get("uploadsInProgress") or 0) + int(cache.get("uploadsQueued") or 0)


def _flush_one(record: dict[str, Any], deadline: float,
               say: Callable[[str], None]) -> str | None:
    """Wait until no write of the mount is left to upload; why not, or None. Zero must
    be read twice in a row: a file closed just now reaches rclone's queue a moment
    after its program has ended."""
    problem = mount_problem(record)
    if problem:
        return problem
    clean = 0
    next_word = time.monotonic() + 10
    while True:
        try:
            pending = _pending(_rc_stats(record))
        except OSError as exc:
            return (f"the mount of {record['remote']} at {record['target']} is gone (its "
                    f"rclone does not answer: {exc}; rclone's log: {record['log']})")
        clean = clean + 1 if pending == 0 else 0
        if clean >= 2:
            return None
        now = time.monotonic()
        if now > deadline:
            return (f"{pending} write(s) to {record['remote']} through {record['target']} "
                    "had not reached the bucket when the time to wait for them ran out")
        if pending and now > next_word:
            say(f"waiting for {pending} write(s) to reach {record['remote']}")
            next_word = now + 10
        time.sleep(0.05 if pending == 0 else 0.2)


def flush_mounts(timeout: float = FLUSH_TIMEOUT, say: Callable[[str], None] | None = None,
                 only: list[dict[str, Any]] | None = None) -> list[str]:
    """Wait until what was written through the mounts of this node (``only``: those
    named, as :func:`note_job_mounts` names them) has reached the buckets; the
    problems, one line each (empty: all there)."""
    deadline = time.monotonic() + timeout
    records = load_mounts()
    problems = []
    if only is not None:
        keys = {r["key"] for r in records}
        problems = [f"the mount of {m['remote']} at {m['target']} is gone (unmounted while "
                    "the job ran)" for m in only if m["key"] not in keys]
        wanted = {m["key"] for m in only}
        records = [r for r in records if r["key"] in wanted]
    for record in records:
        problem = _flush_one(record, deadline, say or (lambda _line: None))
        if problem:
            problems.append(problem)
    return problems


def job_mounts_file(job: str) -> str:
    """Where the mounts a job uses are named (in the job's directory ``job``)."""
    return os.path.join(job, "mounts.json")


def note_job_mounts(job_id: int, mounts: list[dict[str, Any]]) -> None:
    """Name in the job's directory the mounts its run uses (those the run waits for
    and fails without); nothing when it uses none."""
    import json

    keys = {_mount_key(os.path.normpath(resolve_target(m["target"])))
            for m in mounts if m["mode"] != "COPY"}
    mine = [{"key": r["key"], "target": r["target"], "remote": r["remote"]}
            for r in load_mounts() if r["key"] in keys]
    if mine:
        os.makedirs(job_dir(job_id), exist_ok=True)
        write_atomic(job_mounts_file(job_dir(job_id)), json.dumps(mine))


def flush_into_log(job: str, log: BinaryIO) -> bool:
    """:func:`flush_mounts` for a job's run (``job``: its directory), saying what it
    waits for and what failed in the run's log; False when a write did not reach its
    bucket or a mount is gone."""
    import json

    def say(line: str) -> None:
        log.write(f"skyc: {line}\n".encode())
        log.flush()

    try:
        only = json.loads(read_text(job_mounts_file(job)) or "[]")
        problems = flush_mounts(FLUSH_TIMEOUT, say, only)
    except (OSError, ValueError, KeyError, TypeError) as exc:  # a record not as written
        problems = [f"cannot tell whether the job's writes reached its buckets: {exc!r}"]
    for problem in problems:
        say(problem)
    return not problems


def _is_rclone(pid: int) -> bool:
    """Whether ``pid`` is still a mount's rclone (or the sudo that runs it)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return b"rclone" in fh.read()
    except OSError:
        return False


def _end_process(pid: int, sudo: list[str]) -> None:
    """Wait for a mount's rclone to end (as it does once unmounted); TERM, then KILL."""
    import signal

    for sig, wait in ((0, 5.0), (signal.SIGTERM, 5.0), (signal.SIGKILL, 2.0)):
        if sig and _is_rclone(pid):
            try:
                os.kill(pid, sig)
            except PermissionError:
                _run([*sudo, "kill", f"-{int(sig)}", str(pid)], timeout=30)
            except ProcessLookupError:
                return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not _is_rclone(pid):
                return
            time.sleep(0.05)


def _unmount(path: str, sudo: list[str]) -> bool:
    """Unmount ``path``: fusermount, umount, then lazily; whether it is unmounted."""
    fuse = [p for p in (find_program("fusermount3", os.environ),
                        find_program("fusermount", os.environ)) if p]
    tries = [[f, "-u", path] for f in fuse]
    if os.geteuid() == 0 or sudo:
        tries.append(["umount", path])
    tries += [[f, "-uz", path] for f in fuse]
    if os.geteuid() == 0 or sudo:
        tries.append(["umount", "-l", path])
    for argv in tries:
        if path not in mount_table():
            return True
        _run([*sudo, *argv], timeout=30)
    return path not in mount_table()


def release_mount(record: dict[str, Any]) -> str | None:
    """Unmount a recorded mount, end its rclone, remove its cache and record; why it
    could not be unmounted, or None."""
    import contextlib
    import shutil

    sudo = _sudo_words(record)
    problem = None
    if not _unmount(record["path"], sudo):
        problem = f"{record['target']} ({record['remote']}) could not be unmounted"
    if record.get("pid"):
        _end_process(int(record["pid"]), sudo)
    shutil.rmtree(record["cache"], ignore_errors=True)
    if os.path.exists(record["cache"]) and sudo:
        _run([*sudo, "rm", "-rf", record["cache"]], timeout=120)
    for path in (record["log"], os.path.join(mounts_dir(), record["key"] + ".json")):
        with contextlib.suppress(OSError):
            os.unlink(path)
    return problem


def release_mounts(flush_first: float = 20.0) -> tuple[int, list[str]]:
    """Unmount every recorded mount (after waiting up to ``flush_first`` s for its
    writes); (how many were released, the problems)."""
    if not has_mounts():
        return 0, []
    with MountsLock():
        records = load_mounts()
        flush_mounts(flush_first)
        problems = [p for p in (release_mount(r) for r in records) if p]
    return len(records), problems


class MountsLock:
    """One agent at a time changes this node's mounts (two jobs starting at once)."""

    def __enter__(self) -> None:
        import fcntl

        os.makedirs(mounts_dir(), mode=0o700, exist_ok=True)
        self.fd = os.open(os.path.join(mounts_dir(), ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _mount_argv(rc: Rclone, spec: dict[str, Any], path: str, cache: str,
                port: int, sudo: list[str]) -> list[str]:
    argv = [*sudo, *rc.argv("mount", spec["remote"], path), *MOUNT_FLAGS[spec["mode"]],
            "--dir-cache-time", DIR_CACHE_TIME, "--cache-dir", cache,
            "--rc", "--rc-addr", f"127.0.0.1:{port}"]
    if sudo:  # rclone runs as root: the files are this user's, open to it
        argv += ["--allow-other", "--uid", str(os.getuid()), "--gid", str(os.getgid())]
    return argv


def _start_mount(rc: Rclone, spec: dict[str, Any], path: str, key: str,
                 sudo: list[str]) -> tuple[dict[str, Any], str | None]:
    """Start rclone mounting ``spec`` at ``path`` and wait until the mount is live;
    (its record, why it is not live or None)."""
    import secrets
    import subprocess

    cache = os.path.join(mounts_dir(), key)
    log_path = os.path.join(mounts_dir(), key + ".log")
    os.makedirs(cache, mode=0o700, exist_ok=True)
    port = _free_port()
    login = {RC_LOGIN[0]: "skyc", RC_LOGIN[1]: secrets.token_hex(16)}
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(_mount_argv(rc, spec, path, cache, port, sudo),
                                env={**rc.env, **login}, stdin=subprocess.DEVNULL,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    record = {"key": key, "target": spec["target"], "remote": spec["remote"],
              "mode": spec["mode"], "path": path, "cache": cache, "log": log_path,
              "rc_port": port, "rc_user": login[RC_LOGIN[0]], "rc_pass": login[RC_LOGIN[1]],
              "pid": proc.pid, "sudo": bool(sudo)}
    deadline = time.monotonic() + MOUNT_WAIT
    while time.monotonic() < deadline:
        if path in mount_table():
            return record, None
        if proc.poll() is not None:
            return record, f"rclone mount ended ({rclone_reason(read_text(log_path) or '')})"
        time.sleep(0.02)
    _end_process(proc.pid, sudo[:2])
    return record, f"not mounted after {MOUNT_WAIT:.0f} s (rclone's log: {log_path})"


def _mount(rc: Rclone, spec: dict[str, Any], path: str, key: str, what: str) -> None:
    info = rc.stat(spec["remote"], what)
    if not info.get("IsDir"):
        raise MountError(f"{what}: {spec['remote']} is a file; only a bucket or a "
                         "directory in one can be mounted (COPY copies a file)", BUCKET_EXIT)
    if not (find_program("fusermount3", rc.env) or find_program("fusermount", rc.env)):
        raise MountError(f"{what}: fusermount3 is not installed on node {rc.node}; "
                         "install rclone and fuse3", TOOL_EXIT)
    sudo = rc.mount_prefix(what)
    try:
        _make_dir(path, rc, what)
        if os.listdir(path):
            raise MountError(f"{what}: {spec['target']} is a directory with files in it; "
                             "a bucket is mounted on a new or empty directory")
    except OSError as exc:
        raise MountError(f"{what}: {exc}") from None
    path = os.path.realpath(path)
    for _ in range(3):
        record, problem = _start_mount(rc, spec, path, key, sudo)
        if problem is None:
            _save_mount(record)
            return
        if "address already in use" not in problem:  # its port taken meanwhile: again
            break
    raise MountError(f"{what}: {problem}")


def _copy(rc: Rclone, spec: dict[str, Any], path: str, what: str) -> None:
    info = rc.stat(spec["remote"], what)
    into = path if info.get("IsDir") else os.path.dirname(path)
    try:
        _make_dir(into, rc, what)
    except OSError as exc:
        raise MountError(f"{what}: {exc}") from None
    verb = "copy" if info.get("IsDir") else "copyto"
    code, _, err = _run(rc.argv(verb, spec["remote"], path), rc.env)
    if code != 0:
        raise MountError(f"{what}: rclone {verb} failed: {rclone_reason(err)}")


def _same_remote(source: str, remote: str) -> bool:
    """Whether a mount's source (rclone writes ``name{hash}:path``) is ``remote``."""
    name, _, rest = source.partition(":")
    return f"{name.split('{')[0]}:{rest}".rstrip("/") == remote.rstrip("/")


def _apply_one(rc: Rclone, spec: dict[str, Any]) -> dict[str, str]:
    target, remote, mode = spec["target"], spec["remote"], spec["mode"]
    path = os.path.normpath(resolve_target(target))
    what = (f"cannot copy {remote} to {target}" if mode == "COPY"
            else f"cannot mount {remote} at {target}")
    if rc.program is None:
        raise MountError(f"{what}: rclone is not installed on node {rc.node}; install "
                         "rclone and fuse3", TOOL_EXIT)
    key = _mount_key(path)
    record = next((r for r in load_mounts() if r["key"] == key), None)
    if record is not None:
        if (record["remote"], record["mode"]) == (remote, mode) and not mount_problem(record):
            return {"target": target, "done": "kept"}
        problem = release_mount(record)
        if problem:
            raise MountError(f"{what}: {problem}")
    if mode == "COPY":
        _copy(rc, spec, path, what)
        return {"target": target, "done": "copied"}
    there = mount_table().get(os.path.realpath(path))
    if there is not None:  # another node of this machine mounted it (local nodes)
        if there[0] == "fuse.rclone" and _same_remote(there[1], remote):
            return {"target": target, "done": "shared"}
        raise MountError(f"{what}: {target} is a mount point already ({there[1]})")
    _mount(rc, spec, path, key, what)
    return {"target": target, "done": "mounted"}


def _read_apply(data: bytes) -> tuple[str, list[dict[str, Any]], dict[str, str]]:
    """(node name, mounts, rclone settings) from ``mounts apply``'s stdin; ValueError
    naming what is wrong (a setting's name, never its value)."""
    import json

    doc = json.loads(data or b"{}")
    if not isinstance(doc, dict):
        raise ValueError("expected a JSON object")
    mounts, settings = doc.get("mounts") or [], doc.get("env") or {}
    if not isinstance(mounts, list) or not isinstance(settings, dict):
        raise ValueError("mounts must be a list and env an object")
    for spec in mounts:
        if not (isinstance(spec, dict) and isinstance(spec.get("target"), str)
                and isinstance(spec.get("remote"), str) and ":" in spec["remote"]
                and spec.get("mode") in BUCKET_MODES):
            raise ValueError(f"not a mount: {json.dumps(spec)[:200]} (target, "
                             f"remote NAME:PATH, mode one of {', '.join(BUCKET_MODES)})")
    for name, value in settings.items():
        if not (name.startswith("RCLONE_") and isinstance(value, str)
                and name.replace("_", "").isalnum()):
            raise ValueError(f"env: {name[:80]!r} is not an rclone setting (RCLONE_*)")
    return str(doc.get("node") or os.uname().nodename), mounts, settings


def _cmd_apply(args: Args) -> int:
    import json

    try:
        node, mounts, settings = _read_apply(sys.stdin.buffer.read())
    except ValueError as exc:
        sys.stderr.write(f"skyc-agent: error: mounts apply: stdin: {exc}\n")
        return 2
    rc = Rclone(node, settings)
    done = []
    try:
        with MountsLock():
            for spec in mounts:
                done.append(_apply_one(rc, spec))
            if args.job is not None:
                note_job_mounts(args.job, mounts)
    except MountError as exc:
        sys.stderr.write(rc.scrub(str(exc)).replace("\n", " ") + "\n")
        return exc.code
    print(json.dumps(done))
    return 0


def _cmd_flush(args: Args) -> int:
    problems = flush_mounts(args.timeout, lambda line: print(line, flush=True))
    for problem in problems:
        sys.stderr.write(problem + "\n")
    return 1 if problems else 0


def _cmd_release(args: Args) -> int:
    import json

    released, problems = release_mounts()
    for problem in problems:
        sys.stderr.write(problem + "\n")
    print(json.dumps({"released": released}))
    return 1 if problems else 0


def _cmd_check(args: Args) -> int:
    import json

    state = [{"target": r["target"], "remote": r["remote"], "mode": r["mode"],
              "problem": mount_problem(r)} for r in load_mounts()]
    print(json.dumps(state))
    return 1 if any(s["problem"] for s in state) else 0


def cmd_mounts(args: Args) -> int:
    actions = {"apply": _cmd_apply, "flush": _cmd_flush, "release": _cmd_release,
               "check": _cmd_check}
    return actions[args.action](args)
