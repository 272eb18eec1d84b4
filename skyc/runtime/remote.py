"""Calling the node agent over a transport: upload it once per version, run its sub-commands."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import socket
import sys
import time
from collections.abc import Callable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from skyc.errors import RuntimeAgentError, TransportError
from skyc.runtime import agent as agent_module
from skyc.runtime.transport import (
    CommandResult,
    OutputSink,
    StdinSource,
    Transport,
    upload_bytes,
)

AGENT_MISSING = 217


@lru_cache(maxsize=1)
def agent_source() -> tuple[bytes, str]:
    """The agent's code and its version (the agent's VERSION plus a hash of its code)."""
    data = Path(agent_module.__file__).read_bytes()
    digest = hashlib.sha256(data).hexdigest()[:12]
    return data, f"{agent_module.VERSION}-{digest}"


def agent_module_name(version: str) -> str:
    """The name the agent of ``version`` has on a node: ``~/.skyc/<name>.py``. It is
    imported from there, not run as a script, so that the node's Python keeps its
    compiled code (``~/.skyc/__pycache__``) instead of compiling it for every phase."""
    return "agent_" + version.replace("-", "_")


def node_label(transport: Transport) -> str:
    n = transport.node
    if n.rank == 0:
        return f"({n.name}, rank={n.rank})"
    return f"({n.name}, rank={n.rank}, ip={n.ip})"


def parse_trailer(res: CommandResult, what: str, node: str) -> int:
    """The exit code the agent reported on its last stderr line."""
    return read_trailer(res, what, node)[0]


def read_trailer(res: CommandResult, what: str, node: str) -> tuple[int, bool]:
    """(exit code, whether the job was cancelled on that node) from the agent's trailer."""
    code, reason = read_trailer_reason(res, what, node)
    return code, reason is not None


def read_trailer_reason(res: CommandResult, what: str, node: str) -> tuple[int, str | None]:
    """(exit code, why the job was stopped on that node: user, peer, abort; None when it
    was not) from the agent's trailer (an older agent gives no reason: "user")."""
    text = res.stderr.decode("utf-8", "replace")
    lines = text.rstrip("\n").splitlines()
    if lines and lines[-1].startswith(agent_module.EXIT_TRAILER):
        words = lines[-1].split()
        if "cancelled" not in words[2:]:
            return int(words[1]), None
        after = words[words.index("cancelled") + 1:]
        return int(words[1]), after[0] if after else "user"
    detail = "\n".join(ln for ln in lines if ln.strip())[-2000:]
    raise TransportError(
        f"node {node}: {what} ended without a result (exit status {res.exit_code})"
        + (f": {detail}" if detail else ": the connection or the node was lost"))


PROBE_VAR = "skyc_v"


def read_probe(path: str, guard: str = "") -> str:
    """A probe for :meth:`NodeAgent.ensure`: the first line of the file at the shell word
    ``path`` (nothing when it is missing), read when the shell test ``guard`` holds.
    Builtins only: asking forks no process."""
    read = f'{{ IFS= read -r {PROBE_VAR} < {path}; }} 2>/dev/null'
    return f"{guard} && {read}" if guard else read


def _new_job_shell(name: str, num_nodes: int) -> str:
    """The shell that allocates the next job id on a head node and prints ``job_id=N``:
    ``mkdir`` is the atomic step. The highest id so far is found with the shell's own
    glob and arithmetic: one process (the mkdir) where a pipeline of ls, grep, sort and
    tail took five."""
    meta = json.dumps({"name": name, "num_nodes": num_nodes, "submitted": time.time(),
                       "client": {"pid": os.getpid(), "host": socket.gethostname()}},
                      sort_keys=True)
    return ('d="$HOME/.skyc/jobs"; { [ -d "$d" ] || mkdir -p "$d"; } && { n=0; '
            'for f in "$d"/*; do b=${f##*/}; case $b in ""|*[!0-9]*) ;; '
            '*) [ "$b" -gt "$n" ] && n=$b ;; esac; done; n=$((n + 1)); '
            'until mkdir "$d/$n" 2>/dev/null; do [ -w "$d" ] || break; n=$((n + 1)); done; '
            f'printf "%s" {shlex.quote(meta)} > "$d/$n/meta.json" && echo "job_id=$n"; }}')


class NodeAgent:
    """The agent on one node, reached through that node's transport."""

    def __init__(self, transport: Transport, python: str = "python3") -> None:
        self.transport = transport
        self.python = python
        self.label = node_label(transport)
        self.setup_hash = ""
        # job id -> why it was stopped on this node (user, peer, abort), as its phase
        # ended while followed
        self.cancelled: dict[int, str] = {}
        self.probed: dict[str, str] = {}

    @property
    def name(self) -> str:
        return self.transport.node.name

    def _command(self, args: str) -> str:
        _, version = agent_source()
        name = agent_module_name(version)
        # sys.path[0] (the working directory for -c) becomes ~/.skyc, and only it.
        start = (f"import sys; sys.path[0] = sys.argv.pop(1); import {name}; "
                 f"sys.exit({name}.main())")
        return (f'[ -f "$HOME/.skyc/{name}.py" ] || exit {AGENT_MISSING}; '
                f'exec {self.python} -S -c {shlex.quote(start)} "$HOME/.skyc" {args}')

    async def ensure(self, probes: Mapping[str, str] | None = None,
                     new_job: tuple[str, int] | None = None) -> int | None:
        """Upload the agent unless this version is already on the node; also learn the hash
        of the setup last run there. One plain shell command: no Python start-up.

        ``probes`` (name -> shell command that leaves one line in ``$skyc_v``, such as
        :func:`read_probe`) ride along in that command: their answers are in
        :attr:`probed`, so a caller that needs a node's state (its synced trees' ids)
        does not spend another round trip on it. ``new_job`` (name, number of nodes), on
        the head: the job's id is allocated too (as :meth:`new_job` does, in the same
        command when the agent is there) and returned; None without it. Files are read
        with the shell's own ``read``: a ``$(cat ...)`` forked twice per file."""
        _, version = agent_source()
        asks = "".join(f'{PROBE_VAR}=; {command}; echo "probe {i} ${PROBE_VAR}"; '
                       for i, command in enumerate((probes or {}).values()))
        allocate = f" {_new_job_shell(*new_job)};" if new_job else ""
        setup_hash = read_probe('"$HOME/.skyc/setup_hash"')
        res = await self.transport.run(
            f'if [ -f "$HOME/.skyc/{agent_module_name(version)}.py" ]; then echo present;'
            f'{allocate} fi; {asks}'
            f'{PROBE_VAR}=; {setup_hash}; echo "setup_hash=${PROBE_VAR}"; true', timeout=60)
        lines = res.stdout.decode("utf-8", "replace").splitlines()
        names = list(probes or {})
        self.setup_hash = ""
        for line in lines:
            if line.startswith("setup_hash="):
                self.setup_hash = line.partition("=")[2].strip()
            elif line.startswith("probe "):
                _, index, value = (line + " ").split(" ", 2)
                if index.isdigit() and int(index) < len(names):
                    self.probed[names[int(index)]] = value.strip()
        if "present" not in lines:
            await self.install()
            return await self.new_job(*new_job) if new_job else None
        return self._job_id(res) if new_job else None

    async def install(self) -> None:
        data, version = agent_source()
        await upload_bytes(self.transport, data, f"~/.skyc/{agent_module_name(version)}.py",
                           0o644)

    async def call(self, args: str, *, stdin: StdinSource = None,
                   on_stdout: Callable[[bytes], None] | None = None,
                   timeout: float | None = None) -> CommandResult:
        res = await self.transport.run(self._command(args), stdin=stdin, on_stdout=on_stdout,
                                       timeout=timeout)
        if res.exit_code == AGENT_MISSING and not isinstance(stdin, (bytes, type(None))):
            raise RuntimeAgentError(f"node {self.name}: agent missing; call ensure() first")
        if res.exit_code == AGENT_MISSING:
            await self.install()
            res = await self.transport.run(self._command(args), stdin=stdin,
                                           on_stdout=on_stdout, timeout=timeout)
        return res

    async def call_json(self, args: str, *, stdin: bytes | None = None,
                        timeout: float | None = 60) -> Any:
        res = await self.call(args, stdin=stdin, timeout=timeout)
        if res.exit_code != 0:
            raise RuntimeAgentError(
                f"node {self.name}: agent '{args.split()[0]}' failed (exit {res.exit_code}): "
                f"{res.stderr.decode(errors='replace').strip()[-2000:]}")
        return json.loads(res.stdout.decode())

    async def facts(self) -> dict[str, Any]:
        """Node facts (accelerators, Python); installs the agent when it is missing."""
        facts: dict[str, Any] = await self.call_json("facts")
        return facts

    async def new_job(self, name: str, num_nodes: int) -> int:
        """Allocate the next job id on this (head) node: ``mkdir`` is the atomic step."""
        return self._job_id(await self.transport.run(_new_job_shell(name, num_nodes),
                                                     timeout=60))

    def _job_id(self, res: CommandResult) -> int:
        for line in res.stdout.decode("utf-8", "replace").splitlines():
            if line.startswith("job_id=") and line[7:].strip().isdigit():
                return int(line[7:])
        raise RuntimeAgentError(f"node {self.name}: cannot allocate a job id: "
                                f"{res.stderr.decode(errors='replace').strip()}")

    async def run_phase(self, job_id: int, phase: str, command: str, env: dict[str, str],
                        cwd: str, *, follow: bool, on_stdout: OutputSink,
                        setup_hash: str = "", force: bool = False) -> int:
        """Start a phase in ``cwd`` on the node (its script and environment travel on
        stdin); with follow, stream its output (bytes) to its end. Returns the phase's
        exit code."""
        args = f"run {job_id} {phase}"
        if follow:
            args += " --follow"
        if setup_hash:
            args += f" --setup-hash {setup_hash}"
        if force:
            args += " --force"
        spec = agent_module.encode_run_spec(command, env, cwd)
        res = await self.call(args, stdin=spec, on_stdout=on_stdout)
        code, reason = read_trailer_reason(res, phase, self.name)
        if reason is not None:
            self.cancelled[job_id] = reason
        return code

    async def tail(self, job_id: int, follow: bool,
                   on_stdout: OutputSink) -> tuple[int, bool]:
        """Stream a job's output; (exit code, whether it was cancelled on this node)."""
        args = f"tail {job_id}" + (" --follow" if follow else "")
        return await self._streaming(args, b"", on_stdout, "logs")

    async def _streaming(self, args: str, stdin: bytes, on_stdout: OutputSink,
                         what: str) -> tuple[int, bool]:
        res = await self.call(args, stdin=stdin, on_stdout=on_stdout)
        return read_trailer(res, what, self.name)

    async def cancel(self, job_id: int, reason: str = "user") -> bool:
        """Stop the job here; False when it had already finished (or is unknown here).
        ``reason``: user, peer (another node failed) or abort (it never ran)."""
        res = await self.call(f"cancel {job_id} --reason {reason}", timeout=30)
        if res.exit_code != 0:
            return False
        try:
            return bool(json.loads(res.stdout.decode()).get("cancelled"))
        except ValueError:
            return False

    async def stop_all(self) -> dict[str, Any]:
        """End every job of this node and every process they started."""
        result: dict[str, Any] = await self.call_json("stop-all", timeout=60)
        return result

    async def status(self) -> list[dict[str, Any]]:
        jobs: list[dict[str, Any]] = await self.call_json("status")
        return jobs


def local_python() -> str:
    return shlex.quote(sys.executable)
