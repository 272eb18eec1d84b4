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
    mounts.json      the bucket mounts the job uses (its run ends once their writes
                     have reached the buckets)

Bucket mounts are kept in ``~/.skyc/mounts/`` (one record per target, mode 0600, with
the mount's rclone cache and log); the store's settings and credentials are given to
rclone's environment only.

A job's environment (secrets included) arrives on stdin (:func:`encode_run_spec`)
and is kept in memory only. Every process a job starts inherits
``SKYC_JOB_MARK=<node token>/<job>`` (the token is kept in ``~/.skyc/token``), so
cancel and stop-all find the processes that left the job's process group (``setsid``
daemons) through ``/proc/<pid>/environ``. Sub-commands that stream end
with a trailer line on stderr, ``__skyc_exit__ <code> [cancelled]``, so the caller can
tell the job's exit code from a broken connection.

Its source is the package ``skyc/runtime/node_agent/``, one module per concern, in
the order they are joined: base (files, token, job marks), status (the job table),
accelerators (GPU and TPU detection), sync (receiving a synced tree), mounts (buckets
through rclone), supervise (running and following phases), stop (cancel, stop-all),
autostop (the idle watch), cli (the command line). Each imports only os, sys and time
at its top, the stdlib elsewhere where it is used, and names from the modules before
it. ``skyc.runtime.agent_bundle``
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
    from collections.abc import Callable, Mapping
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
    job cancelled, then stop their process groups and every marked process; then
    unmount its buckets (a mount would outlive the node on a machine it shares)."""
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
    released, problems = release_mounts()
    for problem in problems:
        sys.stderr.write(f"{problem}\n")
    print(json.dumps({"stopped": stopped, "left": len(marked_pids(None)),
                      "mounts_released": released}))
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
    "mounts": (cmd_mounts, (("action", ("apply", "flush", "release", "check")),),
               {"--timeout": ("timeout", float, FLUSH_TIMEOUT), "--job": ("job", int, None)}),
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
