"""The ``pulumi`` CLI as the Automation API runs it, made interruptible.

The Automation API runs every CLI command through ``PulumiCommand.run``; this
subclass runs ``preview``, ``up``, ``refresh`` and ``destroy`` itself, so it holds the
very process it started: when this thread's engine commands are asked to stop
(:func:`skyc.stacks.engine.interruptible`), that process gets SIGINT, as Ctrl-C
sends it: pulumi then finishes the operations in flight, records them in its state
and exits, and :class:`~skyc.stacks.engine.EngineInterrupted` is raised. A command
asked to stop before it started is never started. Other commands (version, stack
select, config, outputs, export) run as the SDK runs them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping
from typing import IO, Any

from pulumi.automation import CommandResult, PulumiCommand
from pulumi.automation.errors import create_command_error

from skyc.errors import EngineInterrupted
from skyc.stacks.engine import interrupt_requested

INTERRUPTIBLE = frozenset({"preview", "up", "refresh", "destroy"})
KILL_GRACE_S = 60.0   # after SIGINT, how long pulumi may take to save its state
_POLL_S = 0.05
_HINT = "what it created so far is in its state"


def subcommand(args: list[str]) -> str | None:
    """The CLI subcommand of ``args`` (its first word that is not a flag)."""
    return next((a for a in args if not a.startswith("-")), None)


class InterruptibleCommand(PulumiCommand):
    def run(self, args: list[str], cwd: str, additional_env: Mapping[str, str],
            on_output: Callable[[str], Any] | None = None,
            on_error: Callable[[str], Any] | None = None) -> CommandResult:
        op = subcommand(args)
        if op not in INTERRUPTIBLE:
            result: CommandResult = super().run(args, cwd, additional_env, on_output, on_error)
            return result
        if interrupt_requested():
            raise EngineInterrupted(f"pulumi {op} was interrupted before it started",
                                    hint="nothing was changed")
        if "--non-interactive" not in args:
            args.insert(0, "--non-interactive")
        env = {**os.environ, **additional_env, "PULUMI_AUTOMATION_API": "true"}
        if os.path.isabs(self.command):
            env["PATH"] = os.pathsep.join([os.path.dirname(self.command), env.get("PATH", "")])
        out: list[str] = []
        err: list[str] = []
        # Its own session: a Ctrl-C at the terminal reaches skyc, which forwards it
        # once (a second SIGINT would make pulumi stop without saving its state).
        with subprocess.Popen([self.command, *args], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, cwd=cwd,
                              env=env, encoding="utf-8", start_new_session=True) as proc:
            readers = [_reader(proc.stdout, on_output, out), _reader(proc.stderr, on_error, err)]
            try:
                interrupted = _wait(proc)
            except BaseException:
                stop(proc)
                raise
            finally:
                for reader in readers:
                    reader.join(timeout=KILL_GRACE_S)
        if interrupted:
            raise EngineInterrupted(f"pulumi {op} was interrupted", hint=_HINT)
        result = CommandResult(stdout="\n".join(out), stderr="\n".join(err), code=proc.returncode)
        if proc.returncode != 0:
            raise create_command_error(result)
        return result


def _reader(stream: IO[str] | None, callback: Callable[[str], Any] | None,
            chunks: list[str]) -> threading.Thread:
    def consume() -> None:
        assert stream is not None
        for line in iter(stream.readline, ""):
            text = line.rstrip()
            if callback is not None:
                callback(text)
            chunks.append(text)
        stream.close()

    thread = threading.Thread(target=consume, name="pulumi-output", daemon=True)
    thread.start()
    return thread


def _wait(proc: subprocess.Popen[str]) -> bool:
    """Wait for ``proc`` to end; True when it was stopped on request."""
    while True:
        try:
            proc.wait(_POLL_S)
            return False
        except subprocess.TimeoutExpired:
            pass
        if interrupt_requested():
            stop(proc)
            return True


def stop(proc: subprocess.Popen[str]) -> None:
    """SIGINT, as Ctrl-C: pulumi cancels, saves its state and exits; killed (with
    whatever it started) only if it has not within the grace period. A process that
    has already ended (and been reaped) is not signalled."""
    proc.send_signal(signal.SIGINT)   # a no-op once the process was reaped
    try:
        proc.wait(KILL_GRACE_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
