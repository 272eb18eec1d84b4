"""Running a job's phases: the spec on stdin, a detached supervisor per phase, its
log followed to the end (``run`` and ``tail``)."""

from __future__ import annotations

import os
import sys
import time

from skyc.runtime.node_agent.accelerators import rocm_env
from skyc.runtime.node_agent.base import (
    MARK_VAR,
    PHASES,
    Args,
    cancel_reason,
    find_program,
    job_dir,
    job_mark,
    read_text,
    skyc_dir,
    write_atomic,
    write_trailer,
)
from skyc.runtime.node_agent.mounts import flush_into_log, job_mounts_file
from skyc.runtime.node_agent.status import group_alive

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, BinaryIO


# ---------------------------------------------------------------- running phases

MAX_ARG_STRLEN = 131072  # Linux: the longest single argument or NAME=value string
VANISHED = 137  # a followed job whose files were removed (its node was destroyed)


def _default_signals() -> None:
    """SIGPIPE and SIGXFSZ back to their defaults: Python ignores them at start, and a
    job's programs expect the default. Through ``_signal``, the C module under
    ``signal``, which Python has loaded at start: ``signal`` imports enum (8 ms)."""
    try:
        sig = __import__("_signal")  # no stubs for type checkers: a module, any attribute
    except ImportError:  # pragma: no cover - a Python without it
        sig = __import__("signal")
    for number in (sig.SIGPIPE, sig.SIGXFSZ):
        sig.signal(number, sig.SIG_DFL)



def _start_detached(argv: list[str], cwd: str, env: dict[str, str], out_fd: int) -> int:
    """Start ``argv`` in a session of its own, in ``cwd``, with stdin from /dev/null and
    stdout and stderr to ``out_fd``; its pid. What subprocess.Popen(start_new_session=True)
    does, without importing subprocess at every phase's start. ``argv[0]`` is
    looked for on the PATH of ``env``, as execvpe does; a program found nowhere raises
    FileNotFoundError, and an exec that fails (E2BIG) raises its OSError here, through a
    close-on-exec pipe."""
    program = find_program(argv[0], env)
    if program is None:
        raise FileNotFoundError(2, f"{os.strerror(2)}: {argv[0]!r}")
    err_r, err_w = os.pipe()  # both close on exec (PEP 446)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child execs or exits, so coverage never ends
        try:
            os.close(err_r)
            os.setsid()
            os.chdir(cwd)
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.dup2(out_fd, 1)
            os.dup2(out_fd, 2)
            _default_signals()
            _user_umask()
            os.execve(program, argv, env)
        except OSError as exc:
            os.write(err_w, str(exc.errno or 0).encode())
        finally:
            os._exit(127)
    os.close(err_w)
    report = os.read(err_r, 64)  # empty once the exec closes the pipe: it succeeded
    os.close(err_r)
    if report:
        os.waitpid(pid, 0)
        errno = int(report)
        raise OSError(errno, f"{os.strerror(errno)}: {argv[0]!r}")
    return pid


def _user_umask() -> None:
    """The umask of the user who launched skyc, when skyc said it (local nodes: skyc's
    own files are private, what the user's commands write is not)."""
    try:
        mask = int(os.environ.get("SKYC_USER_UMASK", ""), 8)
    except ValueError:
        return
    if 0 <= mask <= 0o777:
        os.umask(mask)


def _wait_code(pid: int) -> int:
    """A child's exit code; 128+N when signal N ended it (as a shell reports it)."""
    _, status = os.waitpid(pid, 0)  # retried on EINTR by Python itself (PEP 475)
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def _finish(pid: int, phase: str, d: str, log: BinaryIO) -> int:
    """The phase's exit code, once it has ended. A run that uses mounted buckets ends
    once what it wrote through them has reached the buckets (a mount gone, or a write
    that did not get there, fails it). Meanwhile its shell is left unreaped: its
    process group still reads as alive, so the job reads as running and a follower
    waits."""
    if phase != "run" or not os.path.exists(job_mounts_file(d)):
        return _wait_code(pid)
    ended = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)  # None only with WNOHANG
    code = 0 if ended is None else (
        ended.si_status if ended.si_code == os.CLD_EXITED else 128 + ended.si_status)
    flushed = flush_into_log(d, log)
    _wait_code(pid)
    return code if flushed or code else 1


def _spawn_supervisor(job_id: int, phase: str, spec: dict[str, Any]) -> None:
    """Double-fork a supervisor that runs the phase detached from this session."""
    d = job_dir(job_id)
    os.makedirs(d, exist_ok=True)
    for suffix in (".exit", ".pgid"):
        if os.path.exists(os.path.join(d, phase + suffix)):
            os.unlink(os.path.join(d, phase + suffix))
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid:
        os.close(ready_w)
        os.read(ready_r, 1)  # the supervisor has written <phase>.pgid
        os.close(ready_r)
        os.waitpid(pid, 0)
        return
    os.close(ready_r)
    os.setsid()
    if os.fork():
        os._exit(0)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    code = 255
    try:
        env = dict(os.environ)
        env.update(spec.get("env") or {})
        env.update(rocm_env(env))
        env[MARK_VAR] = job_mark(job_id)
        cwd = os.path.expanduser(spec.get("cwd") or "~")
        if not os.path.isdir(cwd):
            cwd = os.path.expanduser("~")
        script = os.path.join(d, phase + ".sh")
        write_atomic(script, spec["command"])
        with open(os.path.join(d, phase + ".log"), "ab") as log:
            try:
                pid = _start_detached(["bash", script], cwd, env, log.fileno())
            except OSError as exc:  # E2BIG: an environment value over the kernel's limit
                log.write(f"skyc: cannot start {phase}: {exc}\n".encode())
                write_atomic(os.path.join(d, phase + ".pgid"), "0")
                os.write(ready_w, b"x")
                code = 126
                raise
            write_atomic(os.path.join(d, phase + ".pgid"), str(pid))
            os.write(ready_w, b"x")
            os.close(ready_w)
            code = _finish(pid, phase, d, log)
    except OSError:
        pass
    finally:
        write_atomic(os.path.join(d, phase + ".exit"), str(code))
        os._exit(0)


def _follow(job_id: int, phase: str, follow: bool, offset: int = 0) -> int:
    """Copy a phase's log to stdout; with follow, until the phase ends. Returns its code."""
    d = job_dir(job_id)
    log_path = os.path.join(d, phase + ".log")
    exit_path = os.path.join(d, phase + ".exit")
    out: BinaryIO = sys.stdout.buffer
    fh = None
    # Polled: every millisecond for a phase's first 50 ms (its first line shows as soon
    # as its shell starts), then less and less often, down to ten times a second.
    delay = 0.001
    young = time.monotonic() + 0.05
    while True:
        if fh is None and os.path.exists(log_path):
            fh = open(log_path, "rb")  # noqa: SIM115 - kept open while following
            fh.seek(offset)
        done = os.path.exists(exit_path)
        chunk = fh.read(1 << 20) if fh is not None else b""
        if chunk:
            out.write(chunk)
            out.flush()
            delay = 0.002
            continue
        if done or not follow:
            break
        if not os.path.isdir(d):  # the job's files are gone: its node was destroyed
            if fh is not None:
                fh.close()
            return VANISHED
        pgid_text = read_text(os.path.join(d, phase + ".pgid"))
        if pgid_text and not group_alive(int(pgid_text)) and not os.path.exists(exit_path):
            time.sleep(0.2)  # the supervisor may be writing the exit code
            if not os.path.exists(exit_path):
                break
        time.sleep(delay)
        delay = 0.001 if time.monotonic() < young else min(delay * 1.5, 0.1)
    if fh is not None:
        fh.close()
    code_text = read_text(exit_path)
    return int(code_text) if code_text is not None else -1


def encode_run_spec(command: str, env: dict[str, str], cwd: str) -> bytes:
    """What ``run`` reads on stdin: the phase's directory, its command, then each
    variable's name and value, each as ``<byte length>:<utf-8 bytes>``. Read without
    json, whose import (through re and enum) would weigh on each phase's start."""
    fields = [cwd, command]
    for name, value in env.items():
        fields += [name, value]
    out = []
    for field in fields:
        data = field.encode("utf-8", "surrogateescape")
        out.append(b"%d:%s" % (len(data), data))
    return b"".join(out)


def decode_run_spec(data: bytes) -> dict[str, Any]:
    """The spec :func:`encode_run_spec` wrote ({"cwd", "command", "env"}), or a JSON
    object of those keys (written by hand); ValueError when it is neither."""
    if data.lstrip().startswith(b"{"):
        import json

        spec: dict[str, Any] = json.loads(data)
        if not isinstance(spec.get("command"), str):
            raise ValueError("the JSON spec has no command")
        return spec
    fields: list[str] = []
    at = 0
    while at < len(data):
        colon = data.find(b":", at)
        size = data[at:colon]
        if colon < 0 or not size.isdigit():
            raise ValueError(f"no field length at byte {at}")
        end = colon + 1 + int(size)
        if end > len(data):
            raise ValueError(f"the field at byte {at} is cut short")
        fields.append(data[colon + 1:end].decode("utf-8", "surrogateescape"))
        at = end
    if len(fields) < 2 or len(fields) % 2:
        raise ValueError(f"{len(fields)} fields: expected a directory, a command and "
                         "pairs of names and values")
    return {"cwd": fields[0], "command": fields[1],
            "env": dict(zip(fields[2::2], fields[3::2]))}  # noqa: B905 (3.8; lengths equal)


def cmd_run(args: Args) -> int:
    try:
        spec = decode_run_spec(sys.stdin.buffer.read())
    except ValueError as exc:
        sys.stderr.write(f"skyc-agent: error: run: stdin: {exc}\n")
        return 2
    hash_path = os.path.join(skyc_dir(), "setup_hash")
    unchanged = (read_text(hash_path) or "").strip() == args.setup_hash
    if args.phase == "setup" and args.setup_hash and not args.force and unchanged:
        sys.stdout.write("setup unchanged: skipped\n")
        write_trailer(0)
        return 0
    if os.path.exists(os.path.join(job_dir(args.job), "cancelled")):
        sys.stdout.write(f"job {args.job} was cancelled: {args.phase} not started\n")
        write_trailer(143, cancel_reason(args.job))
        return 0
    _spawn_supervisor(args.job, args.phase, spec)
    if not args.follow:
        write_trailer(0)
        return 0
    code = _follow(args.job, args.phase, True)
    if code == 0 and args.phase == "setup" and args.setup_hash:
        os.makedirs(skyc_dir(), exist_ok=True)
        write_atomic(hash_path, args.setup_hash)
    write_trailer(code, cancel_reason(args.job))
    return 0


def cmd_tail(args: Args) -> int:
    code = -1
    for phase in PHASES if args.phase == "all" else (args.phase,):
        if not os.path.exists(os.path.join(job_dir(args.job), phase + ".pgid")):
            continue
        code = _follow(args.job, phase, args.follow)
        if code != 0:
            break
    if code == -1 and cancel_reason(args.job) is not None and not args.follow:
        code = 143  # stopped before it started here
    write_trailer(code, cancel_reason(args.job))
    return 0

