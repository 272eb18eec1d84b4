"""skyc node agent: a single stdlib-only file shipped to every node (Python >= 3.8).

skyc uploads it to ``~/.skyc/agent_<version>.py`` and runs sub-commands over the
node's transport, importing it (so that Python keeps its compiled code) and calling
:func:`main`. Job state lives under ``~/.skyc/jobs/<job_id>/``:

    meta.json        name, submission time, number of nodes (head only)
    <phase>.sh       the phase's script (run as ``bash <phase>.sh``: no argv size limit)
    <phase>.log      output of the phase's command (phase: setup | run)
    <phase>.pgid     process group of the phase's command
    <phase>.exit     exit code, written when the command ends
    cancelled        present when the job was stopped; holds why: user, peer (another
                     node failed) or abort (the client gave up before the job ran)

A job's environment (secrets included) arrives on stdin (:func:`encode_run_spec`)
and is kept in memory only. Every process a job starts inherits
``SKYC_JOB_MARK=<node token>/<job>`` (the token is kept in ``~/.skyc/token``), so
cancel and stop-all find the processes that left the job's process group (``setsid``
daemons) through ``/proc/<pid>/environ``. Sub-commands that stream end
with a trailer line on stderr, ``__skyc_exit__ <code> [cancelled]``, so the caller can
tell the job's exit code from a broken connection.

Its source is the package ``skyc/runtime/node_agent/``, one module per concern, in
the order they are joined: base (files, token, job marks), status (the job table),
accelerators (GPU and TPU detection), supervise (running and following phases), stop
(cancel, stop-all), sync (receiving a synced tree), autostop (the idle watch), cli (the
command line). Each imports only os, sys and time at its top, the stdlib elsewhere
where it is used, and names from the modules before it. ``skyc.runtime.agent_bundle``
joins them into the one file shipped, ``skyc/runtime/agent.py``.
"""

# Generated from skyc/runtime/node_agent/ by `python -m skyc.runtime.agent_bundle`:
# edit those modules and run it again (a test fails while this file is not current).

from __future__ import annotations

import os
import sys
import time

# The agent starts for every phase of every job, and ``run`` needs only what a Python
# started with -S has loaded already (os, sys, time, _signal). What other commands use
# (contextlib, hashlib, json, re, shutil, signal, subprocess, tarfile, uuid) is imported
# where it is used: json alone imports re and enum.
TYPE_CHECKING = False  # typing is not loaded at start either: only type checkers read these
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, BinaryIO


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


# ---------------------------------------------------------------- job table


def group_alive(pgid: int) -> bool:
    if pgid <= 0:
        return False
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def job_status(job_id: int) -> dict[str, Any]:
    import json

    d = job_dir(job_id)
    meta = json.loads(read_text(os.path.join(d, "meta.json")) or "{}")
    info: dict[str, Any] = {"job_id": job_id, "name": meta.get("name"),
                            "submitted": meta.get("submitted"), "exit_code": None,
                            "num_nodes": meta.get("num_nodes"), "client": meta.get("client")}
    reason = cancel_reason(job_id)
    cancelled = reason is not None
    info["cancelled"] = reason
    status = "PENDING"
    for phase in PHASES:
        started = os.path.exists(os.path.join(d, phase + ".pgid"))
        code_text = read_text(os.path.join(d, phase + ".exit"))
        if not started:
            continue
        if code_text is None:
            pgid = int(read_text(os.path.join(d, phase + ".pgid")) or "0")
            alive = pgid > 0 and group_alive(pgid)
            status = ("SETTING_UP" if phase == "setup" else "RUNNING") if alive else "FAILED"
            break
        code = int(code_text)
        info["exit_code"] = code
        if code != 0:
            status = "FAILED_SETUP" if phase == "setup" else "FAILED"
            break
        status = "SUCCEEDED" if phase == "run" else "SETUP_DONE"
    if cancelled and status != "SUCCEEDED":
        # abort: the client gave up before the job ran (a failed sync, a lost client)
        status = "FAILED" if reason == "abort" and status == "PENDING" else "CANCELLED"
    info["status"] = status
    return info


def cmd_status(args: Args) -> int:
    import json

    ids = sorted(int(n) for n in os.listdir(jobs_dir()) if n.isdigit()) if os.path.isdir(
        jobs_dir()) else []
    if args.job is not None:
        ids = [i for i in ids if i == args.job]
    print(json.dumps([job_status(i) for i in ids], sort_keys=True))
    return 0


# ---------------------------------------------------------------- accelerators


def _tool(argv: list[str]) -> str | None:
    """A tool's output; None when it is not installed or fails. Each phase's start asks
    for amd-smi and most nodes have none: PATH is looked through first, so that they do
    not import subprocess or fork for it."""
    if find_program(argv[0], os.environ) is None:
        return None
    import subprocess

    try:
        out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.decode("utf-8", "replace")


def canonical_gpu_name(raw: str, memory_mib: int | None) -> str:
    import re

    name = raw.strip()
    for prefix in ("NVIDIA ", "Tesla ", "AMD Instinct ", "AMD "):
        if name.startswith(prefix):
            name = name[len(prefix):]
    base = re.split(r"[\s\-]", name, maxsplit=1)[0]
    if base == "A100" and memory_mib is not None and memory_mib > 50000:
        return "A100-80GB"
    return base


def detect_nvidia() -> dict[str, Any] | None:
    import re

    out = _tool(["nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader"])
    if not out:
        return None
    gpus: list[dict[str, Any]] = []
    for line in out.splitlines():
        if not line.strip():
            continue
        name, _, mem = line.rpartition(",")
        m = re.search(r"(\d+)", mem)
        mib = int(m.group(1)) if m else None
        gpus.append({"name": name.strip(), "memory_mib": mib})
    if not gpus:
        return None
    return {"vendor": "nvidia", "count": len(gpus), "gpus": gpus,
            "name": canonical_gpu_name(gpus[0]["name"], gpus[0]["memory_mib"])}


def parse_amd_smi(out: str) -> list[dict[str, Any]]:
    """GPUs from ``amd-smi static --asic --vram``: one ``GPU: <n>`` block each, with
    ``MARKET_NAME`` (``Market Name`` in older releases) and the VRAM ``SIZE`` in MB."""
    import re

    gpus: list[dict[str, Any]] = []
    for block in re.split(r"^GPU:\s*\d+\s*$", out, flags=re.M)[1:]:
        name = re.search(r"^\s*(?:MARKET_NAME|Market Name):\s*(.+?)\s*$", block, re.M)
        vram = block.partition("VRAM:")[2]
        size = re.search(r"^\s*SIZE:\s*(\d+)\s*MB", vram, re.M)
        if name:
            gpus.append({"name": name.group(1),
                         "memory_mib": int(size.group(1)) if size else None})
    return gpus


def parse_rocm_smi(out: str, meminfo: str | None) -> list[dict[str, Any]]:
    """GPUs from ``rocm-smi`` (the concise table: the name is on the line under each
    device's row) and ``rocm-smi --showmeminfo vram`` (bytes per device)."""
    import re

    names: list[str] = []
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if re.match(r"^\d+\s+\[0x", line) and i + 1 < len(lines):
            names.append(lines[i + 1].strip())
    total: dict[int, int] = {}
    for m in re.finditer(r"^GPU\[(\d+)\]\s*:\s*VRAM Total Memory \(B\):\s*(\d+)", meminfo or "",
                         re.M):
        total[int(m.group(1))] = int(m.group(2)) // (1024 * 1024)
    return [{"name": n, "memory_mib": total.get(i)} for i, n in enumerate(names)]


def detect_amd() -> dict[str, Any] | None:
    gpus: list[dict[str, Any]] = []
    out = _tool(["amd-smi", "static", "--asic", "--vram"])
    if out:
        gpus = parse_amd_smi(out)
    if not gpus:
        out = _tool(["rocm-smi"])
        if out:
            gpus = parse_rocm_smi(out, _tool(["rocm-smi", "--showmeminfo", "vram"]))
    if gpus:
        return {"vendor": "amd", "count": len(gpus), "gpus": gpus,
                "name": canonical_gpu_name(gpus[0]["name"], gpus[0]["memory_mib"])}
    if os.path.exists("/dev/kfd"):
        return {"vendor": "amd", "count": None, "gpus": [], "name": None}
    return None


ROCM_VISIBILITY = ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")


def rocm_env(env: dict[str, str]) -> dict[str, str]:
    """On an AMD node, the ROCm variables that choose a job's GPUs (what
    ``CUDA_VISIBLE_DEVICES`` does for NVIDIA): the first SKYPILOT_NUM_GPUS_PER_NODE
    devices (rounded up), or all of them when the task asks for none. A variable the
    job or the node already sets is kept, and then none is added."""
    if any(v in env for v in (*ROCM_VISIBILITY, "CUDA_VISIBLE_DEVICES")):
        return {}
    found = detect_amd()
    if not found or not found["count"]:
        return {}
    count = int(found["count"])
    try:
        wanted = float(env.get("SKYPILOT_NUM_GPUS_PER_NODE") or 0)
    except ValueError:
        wanted = 0
    if wanted > 0:
        count = min(count, int(wanted) + (wanted % 1 > 0))
    devices = ",".join(str(i) for i in range(count))
    return {name: devices for name in ROCM_VISIBILITY}


def detect_tpu() -> dict[str, Any] | None:
    import re

    acc = os.environ.get("TPU_ACCELERATOR_TYPE")
    if not acc:
        path = "/sys/class/accel"
        if os.path.isdir(path) and os.listdir(path):
            return {"vendor": "tpu", "count": len(os.listdir(path)), "gpus": [], "name": None}
        return None
    m = re.match(r"^(v\d+[a-z]*)(?:pod)?-(\d+)$", acc)
    count = int(m.group(2)) if m else None
    return {"vendor": "tpu", "count": count, "gpus": [], "name": "tpu-" + acc}


def detect_accelerators() -> dict[str, Any]:
    for probe in (detect_nvidia, detect_amd, detect_tpu):
        found = probe()
        if found:
            return found
    return {"vendor": "none", "count": 0, "gpus": [], "name": None}


def cmd_facts(args: Args) -> int:
    import json

    facts = {"agent_version": VERSION, "python": list(sys.version_info[:3]),
             "hostname": os.uname().nodename, "accelerators": detect_accelerators()}
    print(json.dumps(facts, sort_keys=True))
    return 0


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
            code = _wait_code(pid)
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


# ---------------------------------------------------------------- stopping jobs


def _stop(groups: list[int], job_id: int | None) -> None:
    """TERM, then KILL, the process groups and every process marked with the job."""
    import contextlib
    import signal

    for sig in (signal.SIGTERM, signal.SIGKILL):
        pids = marked_pids(job_id)
        for pgid in groups:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, sig)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        deadline = time.time() + 3
        while time.time() < deadline:
            groups = [g for g in groups if group_alive(g)]
            if not groups and not marked_pids(job_id):
                return
            time.sleep(0.05)


def _live_groups(job_id: int) -> list[int]:
    d = job_dir(job_id)
    groups = []
    for phase in PHASES:
        text = read_text(os.path.join(d, phase + ".pgid"))
        if text and int(text) > 0 and not os.path.exists(os.path.join(d, phase + ".exit")):
            groups.append(int(text))
    return groups


def cmd_cancel(args: Args) -> int:
    import json

    d = job_dir(args.job)
    if not os.path.isdir(d):
        sys.stderr.write(f"no job {args.job} on this node\n")
        return 2
    if os.path.exists(os.path.join(d, "run.exit")):
        _stop([], args.job)  # what the finished job left running (daemons)
        print(json.dumps({"job_id": args.job, "cancelled": False, "reason": "finished"}))
        return 0
    # marked first: a phase that has not started yet will not start
    if cancel_reason(args.job) is None:
        write_atomic(os.path.join(d, "cancelled"), args.reason)
    _stop(_live_groups(args.job), args.job)
    print(json.dumps({"job_id": args.job, "cancelled": True}))
    return 0


def cmd_stop_all(args: Args) -> int:
    """End every job of this node (before the node is destroyed): mark each unfinished
    job cancelled, then stop their process groups and every marked process."""
    import contextlib
    import json

    ids = sorted(int(n) for n in os.listdir(jobs_dir()) if n.isdigit()) if os.path.isdir(
        jobs_dir()) else []
    groups: list[int] = []
    stopped = []
    for job_id in ids:
        d = job_dir(job_id)
        if not os.path.exists(os.path.join(d, "run.exit")):
            if cancel_reason(job_id) is None:
                with contextlib.suppress(OSError):
                    write_atomic(os.path.join(d, "cancelled"), "user")
            stopped.append(job_id)
        groups += _live_groups(job_id)
    _stop(groups, None)
    print(json.dumps({"stopped": stopped, "left": len(marked_pids(None))}))
    return 0


# ---------------------------------------------------------------- sync

SINGLE_FILE_MEMBER = ".skyc-single-file"


def resolve_target(target: str) -> str:
    if target.startswith("~"):
        return os.path.expanduser(target)
    if os.path.isabs(target):
        return target
    return os.path.join(os.path.expanduser("~"), target)


def sync_key(target: str) -> str:
    """Sync state is kept per target as the caller spells it (``~/sky_workdir``), so that
    the caller can read it with a plain ``cat`` (``~/.skyc/sync/<key>.json`` and ``.id``)."""
    import hashlib

    return hashlib.sha256(target.encode("utf-8")).hexdigest()[:24]


def _manifest_path(target: str) -> str:
    return os.path.join(skyc_dir(), "sync", sync_key(target) + ".json")


def load_manifest(target: str) -> dict[str, Any]:
    import json

    text = read_text(_manifest_path(target))
    return json.loads(text) if text else {"id": None, "files": {}}


def cmd_sync_manifest(args: Args) -> int:
    import json

    exists = os.path.lexists(resolve_target(args.target))
    print(json.dumps(load_manifest(args.target) if exists else {"id": None, "files": {}}))
    return 0


def _safe_rel(name: str) -> str:
    norm = os.path.normpath(name)
    if norm.startswith("..") or os.path.isabs(norm):
        raise ValueError(f"unsafe path in sync stream: {name!r}")
    return norm


def _read_exact(fd: int, size: int) -> bytes:
    parts = []
    while size > 0:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            raise ValueError("sync stream ended early")
        parts.append(chunk)
        size -= len(chunk)
    return b"".join(parts)


def _read_meta(fd: int) -> dict[str, Any]:
    """The stream starts with ``<length>\\n`` and the manifest (JSON) of that length."""
    import json

    line = b""
    while not line.endswith(b"\n"):
        byte = os.read(fd, 1)
        if not byte or len(line) > 20:
            raise ValueError("sync stream does not start with its manifest")
        line += byte
    meta: dict[str, Any] = json.loads(_read_exact(fd, int(line)).decode("utf-8"))
    return meta


def _drain(fd: int) -> None:
    while os.read(fd, 1 << 20):
        pass


def _extract_with_tar(fd: int, staging: str, tar_bin: str) -> None:
    import subprocess

    proc = subprocess.run([tar_bin, "-x", "-p", "--no-same-owner", "-f", "-", "-C", staging],
                          stdin=fd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          check=False)
    if proc.returncode != 0:
        raise ValueError("tar: " + proc.stderr.decode("utf-8", "replace").strip()[-500:])


def _extract_with_tarfile(fd: int, staging: str) -> None:
    import shutil
    import tarfile

    dirs = []
    with os.fdopen(os.dup(fd), "rb") as stream, tarfile.open(
            fileobj=stream, mode="r|", encoding="utf-8") as tar:
        for member in tar:
            rel = _safe_rel(member.name)
            dest = os.path.join(staging, rel)
            parent = os.path.dirname(dest)
            if not os.path.isdir(parent):
                os.makedirs(parent)
            if member.isdir():
                os.makedirs(dest, exist_ok=True)
                dirs.append((dest, member))
            elif member.issym():
                os.symlink(member.linkname, dest)
            elif member.isfile():
                src = tar.extractfile(member)
                with open(dest, "wb") as fh:
                    if src is not None:
                        shutil.copyfileobj(src, fh, 1 << 20)
                os.chmod(dest, member.mode & 0o7777)
                os.utime(dest, (member.mtime, member.mtime))
    for dest, member in reversed(dirs):
        os.chmod(dest, member.mode & 0o7777)


def _verify(staging: str, meta: dict[str, Any]) -> None:
    """Every changed entry arrived whole (a stream cut at a member boundary is caught here)."""
    for rel in meta["changed"]:
        kind, size = meta["files"][rel][:2]
        path = os.path.join(staging, SINGLE_FILE_MEMBER if rel == "." else rel)
        if not os.path.lexists(path):
            raise ValueError(f"sync stream incomplete: {rel} missing")
        if kind == "f" and os.lstat(path).st_size != size:
            raise ValueError(f"sync stream incomplete: {rel} truncated")


def _remove(path: str) -> None:
    import shutil

    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)


def _apply(staging: str, target: str, old: dict[str, Any], meta: dict[str, Any]) -> None:
    """Put the staged tree in place at ``target`` (``staging`` is empty when nothing
    changed): moved there whole when nothing is there yet, otherwise its changed entries
    moved in and the entries the new tree no longer has removed."""
    new_files: dict[str, Any] = meta["files"]
    if "." in new_files:  # a single-file mount: the target itself is the file
        if "." in meta["changed"]:
            _replace_file(os.path.join(staging, SINGLE_FILE_MEMBER), target)
        return
    if _place_whole(staging, target):
        return
    _move_changed(staging, target, meta["changed"], new_files)
    _remove_gone(target, old.get("files", {}), new_files)


def _replace_file(src: str, dest: str) -> None:
    """Move the file ``src`` to ``dest``, over a directory there too."""
    import shutil

    if os.path.isdir(dest) and not os.path.islink(dest):
        shutil.rmtree(dest)
    os.replace(src, dest)


def _place_whole(staging: str, target: str) -> bool:
    """The staged tree renamed to ``target`` when nothing (or a file) is there; False
    when a directory is there and the changed entries have to be moved into it."""
    if os.path.lexists(target) and (not os.path.isdir(target) or os.path.islink(target)):
        _remove(target)
    if os.path.lexists(target):
        return False
    os.makedirs(os.path.dirname(target) or "/", exist_ok=True)
    if not staging:
        os.makedirs(target, exist_ok=True)
        return True
    try:
        os.rename(staging, target)
        return True
    except OSError:
        if not os.path.isdir(target) or os.path.islink(target):
            raise
    # Another node on the same filesystem (a local cluster's nodes, a shared mount)
    # put its copy there first: the changed files (all of them) are moved into it.
    return False


def _move_changed(staging: str, target: str, changed: list[str],
                  new_files: dict[str, Any]) -> None:
    """Each changed entry from the staging tree into ``target``, parents first."""
    for rel in sorted(changed, key=lambda p: p.count("/")):
        src = os.path.join(staging, rel)
        dest = os.path.join(target, rel)
        if new_files[rel][0] == "d":
            if os.path.lexists(dest) and (os.path.islink(dest) or not os.path.isdir(dest)):
                os.unlink(dest)
            os.makedirs(dest, exist_ok=True)
            os.chmod(dest, os.stat(src).st_mode & 0o7777)
            continue
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        _replace_file(src, dest)


def _remove_gone(target: str, old_files: dict[str, Any], new_files: dict[str, Any]) -> None:
    """The entries of the previous tree the new one no longer has, children first."""
    import contextlib

    gone = [p for p in old_files if p not in new_files]
    for rel in sorted(gone, key=lambda p: -p.count("/")):
        dest = os.path.join(target, rel)
        if old_files[rel][0] == "d":
            with contextlib.suppress(OSError):  # not empty: it holds files the job wrote
                os.rmdir(dest)
        elif os.path.lexists(dest) and not os.path.isdir(dest):
            os.unlink(dest)


def cmd_sync_apply(args: Args) -> int:
    import json
    import shutil
    import tarfile
    import uuid

    target = resolve_target(args.target)
    old = load_manifest(args.target)
    if not os.path.lexists(target):
        old = {"id": None, "files": {}}
    staging = ""
    try:
        meta = _read_meta(0)
        if meta.get("base") != old.get("id"):
            if meta["changed"]:
                _drain(0)
            sys.stdout.write(json.dumps({"stale": True, "id": old.get("id")}) + "\n")
            write_trailer(3)
            return 0
        if meta["changed"]:
            parent = os.path.dirname(target.rstrip("/")) or "/"
            os.makedirs(parent, exist_ok=True)
            staging = os.path.join(parent, ".skyc-staging-" + uuid.uuid4().hex[:12])
            os.makedirs(staging)
            tar_bin = shutil.which("tar")
            if tar_bin:
                _extract_with_tar(0, staging, tar_bin)
            else:
                _extract_with_tarfile(0, staging)
            _verify(staging, meta)
        if not meta.get("noop"):
            _apply(staging, target, old, meta)
            manifest = _manifest_path(args.target)
            os.makedirs(os.path.dirname(manifest), exist_ok=True)
            write_atomic(manifest, json.dumps({"id": meta["id"], "files": meta["files"]}))
            write_atomic(manifest[:-len(".json")] + ".id", meta["id"])
    except (tarfile.TarError, ValueError, OSError, EOFError) as exc:
        sys.stderr.write(f"sync to {target} failed, previous tree kept: {exc}\n")
        write_trailer(1)
        return 0
    finally:
        if staging and os.path.lexists(staging):
            shutil.rmtree(staging, ignore_errors=True)
    sys.stdout.write(json.dumps({"stale": False, "id": meta["id"]}) + "\n")
    write_trailer(0)
    return 0


# ---------------------------------------------------------------- autostop

AUTOSTOP_FILE = "autostop.json"
_BUSY = ("PENDING", "SETTING_UP", "SETUP_DONE", "RUNNING")
STALE_PENDING_S = 600.0  # a job allocated this long ago that never started holds nothing


def _autostop_path() -> str:
    return os.path.join(skyc_dir(), AUTOSTOP_FILE)


def load_autostop() -> dict[str, Any] | None:
    import json

    text = read_text(_autostop_path())
    try:
        return json.loads(text) if text else None
    except ValueError:
        return None


def busy_jobs() -> int:
    """Jobs of this node that run or wait to run (a stale allocation does not count)."""
    ids = sorted(int(n) for n in os.listdir(jobs_dir()) if n.isdigit()) if os.path.isdir(
        jobs_dir()) else []
    count = 0
    for job_id in ids:
        info = job_status(job_id)
        if info["status"] not in _BUSY or info["cancelled"] is not None:
            continue
        age = time.time() - float(info.get("submitted") or 0)
        if info["status"] == "PENDING" and age > STALE_PENDING_S:
            continue
        count += 1
    return count


def ssh_sessions() -> int:
    """Interactive SSH sessions of this user (``sshd: user@pts/N``); skyc's own commands
    run without a terminal (``@notty``) and do not count."""
    uid = os.getuid()
    count = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                argv0 = fh.read().split(b"\0")[0]
            owner = os.stat(f"/proc/{name}").st_uid
        except OSError:
            continue
        if owner == uid and argv0.startswith(b"sshd:") and b"@pts" in argv0:
            count += 1
    return count


def autostop_busy(config: dict[str, Any]) -> bool:
    wait_for = config.get("wait_for") or "jobs_and_ssh"
    if wait_for == "none":
        return False
    if busy_jobs():
        return True
    return wait_for == "jobs_and_ssh" and ssh_sessions() > 0


def autostop_watch(config_id: str) -> int:
    """The autostop daemon: once the node has been idle for the configured time, record
    it and run the configured action. Ends when autostop is cancelled or set again."""
    import json

    last_active = time.time()
    while True:
        config = load_autostop()
        if config is None or config.get("id") != config_id:
            return 0
        now = time.time()
        if autostop_busy(config):
            last_active = now
        elif now - max(last_active, float(config["set_at"])) >= float(config["idle_seconds"]):
            record = {"id": config_id, "fired_at": now,
                      "action": "down" if config.get("down") else "stop"}
            write_atomic(os.path.join(skyc_dir(), "autostop.fired"), json.dumps(record))
            import subprocess

            with open(os.path.join(skyc_dir(), "autostop.log"), "ab") as log:
                subprocess.run(["bash", "-c", config["action"]], cwd="/",
                               stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                               check=False)
            return 0
        time.sleep(float(config.get("check_s") or 10))


def cmd_autostop(args: Args) -> int:
    import contextlib
    import json
    import subprocess
    import uuid

    path = _autostop_path()
    if args.action == "watch":
        return autostop_watch(args.id)
    if args.action == "cancel":
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        print(json.dumps({"cancelled": True}))
        return 0
    if args.action == "status":
        fired = read_text(os.path.join(skyc_dir(), "autostop.fired"))
        print(json.dumps({"config": load_autostop(), "fired": json.loads(fired) if fired
                          else None, "busy_jobs": busy_jobs()}, sort_keys=True))
        return 0
    spec = json.loads(sys.stdin.read() or "{}")
    idle = float(spec["idle_seconds"])
    config = {"id": uuid.uuid4().hex, "set_at": time.time(), "idle_seconds": idle,
              "wait_for": spec.get("wait_for") or "jobs_and_ssh", "down": bool(spec.get("down")),
              "action": spec["action"],
              "check_s": float(spec.get("check_s") or min(60.0, max(1.0, idle / 10)))}
    os.makedirs(skyc_dir(), exist_ok=True)
    write_atomic(path, json.dumps(config, sort_keys=True))
    with contextlib.suppress(FileNotFoundError):
        os.unlink(os.path.join(skyc_dir(), "autostop.fired"))
    # __file__: the agent's one file, which this code runs from (see agent_bundle)
    proc = subprocess.Popen(
        [sys.executable, "-S", os.path.abspath(__file__), "autostop", "watch",
         "--id", config["id"]], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, cwd="/", start_new_session=True)
    print(json.dumps({"set": True, "pid": proc.pid, "id": config["id"]}))
    return 0


# ---------------------------------------------------------------- entry point


# Each command's positional arguments and options, as (name, kind) and
# ``--flag: (name, kind, default)``; a kind is int, str, a tuple of choices, or FLAG (an
# option without a value). skyc writes these command lines, never a person; parsing them
# here rather than with argparse keeps argparse (and the shutil its subcommands import)
# off the start of every phase.
FLAG = "flag"
COMMANDS: dict[str, tuple[Any, tuple[tuple[str, Any], ...],
                          dict[str, tuple[str, Any, Any]]]] = {
    "version": (lambda a: print(VERSION) or 0, (), {}),
    "facts": (cmd_facts, (), {}),
    "run": (cmd_run, (("job", int), ("phase", PHASES)), {
        "--follow": ("follow", FLAG, False), "--setup-hash": ("setup_hash", str, ""),
        "--force": ("force", FLAG, False)}),
    "tail": (cmd_tail, (("job", int),), {
        "--phase": ("phase", (*PHASES, "all"), "all"), "--follow": ("follow", FLAG, False)}),
    "cancel": (cmd_cancel, (("job", int),), {
        "--reason": ("reason", ("user", "peer", "abort"), "user")}),
    "stop-all": (cmd_stop_all, (), {}),
    "status": (cmd_status, (), {"--job": ("job", int, None)}),
    "autostop": (cmd_autostop, (("action", ("set", "cancel", "status", "watch")),),
                 {"--id": ("id", str, "")}),
    "sync-manifest": (cmd_sync_manifest, (("target", str),), {}),
    "sync-apply": (cmd_sync_apply, (("target", str),), {}),
}


class UsageError(Exception):
    """A command line the agent does not understand."""


def _convert(name: str, kind: Any, text: str) -> Any:
    if isinstance(kind, tuple):
        if text not in kind:
            raise UsageError(f"{name}: {text!r} is not one of {', '.join(kind)}")
        return text
    try:
        return kind(text)
    except ValueError:
        raise UsageError(f"{name}: {text!r} is not a valid {kind.__name__}") from None


def parse_args(argv: list[str]) -> tuple[Any, Args]:
    """The command ``argv`` names and its arguments; UsageError when it is not one."""
    if not argv or argv[0] not in COMMANDS:
        raise UsageError(f"expected a command: {', '.join(COMMANDS)}")
    fn, positionals, options = COMMANDS[argv[0]]
    values: dict[str, Any] = {dest: default for dest, _, default in options.values()}
    rest: list[str] = []
    it = iter(argv[1:])
    for arg in it:
        flag, eq, inline = arg.partition("=")
        if not flag.startswith("--"):
            rest.append(arg)
            continue
        if flag not in options:
            raise UsageError(f"{argv[0]}: unknown option {flag}")
        dest, kind, _ = options[flag]
        if kind == FLAG:
            if eq:
                raise UsageError(f"{flag} takes no value")
            values[dest] = True
            continue
        text = inline if eq else next(it, None)
        if text is None:
            raise UsageError(f"{flag} needs a value")
        values[dest] = _convert(flag, kind, text)
    if len(rest) != len(positionals):
        names = " ".join(n.upper() for n, _ in positionals) or "no arguments"
        raise UsageError(f"{argv[0]}: expected {names}, got {len(rest)} argument(s)")
    for (dest, kind), text in zip(positionals, rest):  # noqa: B905 (3.8; lengths equal)
        values[dest] = _convert(dest, kind, text)
    return fn, Args(values)


def main(argv: list[str] | None = None) -> int:
    try:
        fn, args = parse_args(sys.argv[1:] if argv is None else argv)
    except UsageError as exc:
        sys.stderr.write(f"skyc-agent: error: {exc}\n")
        return 2
    code: int = fn(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
