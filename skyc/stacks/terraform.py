"""The terraform engine: drives the ``terraform`` (or ``tofu``) binary in a workspace.

Binary: ``$SKYC_TERRAFORM``, else ``terraform`` on PATH, else ``tofu``: OpenTofu is
driven by this engine, and reads the stacks it writes (:data:`SCHEMA_FAMILY`).
Providers: the user's CLI config (``~/.terraformrc``, ``TF_CLI_CONFIG_FILE``) is
honoured; ``$SKYC_TF_PLUGIN_DIR`` adds ``-plugin-dir`` to ``init`` for offline
provider mirrors. Every run's output is kept in ``<workspace>/logs/<time>-<op>.log``.

The binary is started only inside the engine's error boundary, :data:`ERRORS`: what
starting or waiting for it raises becomes an EngineError naming the command and the
stack. What terraform prints when it fails is read here (its diagnostics, for
:class:`~skyc.errors.ApplyFailed`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import threading
import time
from contextlib import AbstractContextManager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from skyc.errors import ApplyFailed, EngineError, EngineInterrupted
from skyc.model.diagnostics import Diagnostic
from skyc.model.stack import Stack
from skyc.stacks import terraform_json
from skyc.stacks.engine import (
    ProgressCallback,
    ProgressEvent,
    Refresh,
    StackDiff,
    interrupt_requested,
)
from skyc.stacks.engine_errors import ErrorTable, Rule
from skyc.stacks.terraform_output import (
    diagnostic,
    drift_deleted,
    event,
    managed_count,
    parse_plan_json,
    refreshed_resources,
)

NAME = "terraform"
SCHEMA_FAMILY = terraform_json.SCHEMA_FAMILY
_INIT_MARK = ".terraform/skyc-init.sha256"

PLAN_FILE = "skyc.tfplan"
# The saved plan of a refresh: read, then removed; one per process (refreshes may overlap)
REFRESH_PLAN_FILE = "skyc-refresh-{pid}.tfplan"
DEFAULT_APPLY_TIMEOUT_S = 3600.0
_KILL_GRACE_S = 30.0
# How long plan/apply/destroy wait for the state lock, e.g. held by a terraform
# that outlived an interrupted skyc and is still saving what it created.
LOCK_TIMEOUT_S = 300
# How often a run that lost the race for the state lock (``lost_lock_race``) is tried.
LOCK_RACE_TRIES = 5

ERRORS = ErrorTable(NAME, {
    "builtins.OSError": Rule(EngineError, "terraform {op} of stack {stack}: cannot run "
                             "{binary}: {exc}"),
    "subprocess.TimeoutExpired": Rule(EngineError, "terraform {op} of stack {stack} did not "
                                      "finish within {exc.timeout:.0f} s"),
    "subprocess.SubprocessError": Rule(EngineError, "terraform {op} of stack {stack} failed: "
                                       "{exc}"),
})


def find_binary() -> str:
    """The terraform-compatible binary to run, or an EngineError saying how to get one."""
    explicit = os.environ.get("SKYC_TERRAFORM")
    if explicit:
        found = shutil.which(explicit)
        if not found:
            raise EngineError(
                f"SKYC_TERRAFORM={explicit} is not an executable",
                hint="point SKYC_TERRAFORM at a terraform or tofu binary, or unset it",
            )
        return found
    for name in ("terraform", "tofu"):
        found = shutil.which(name)
        if found:
            return found
    raise EngineError(
        "neither terraform nor tofu was found on PATH",
        hint="install Terraform (https://developer.hashicorp.com/terraform/install) or "
        "OpenTofu (https://opentofu.org/docs/intro/install/), or set SKYC_TERRAFORM",
    )


class TerraformEngine:
    """Runs terraform in one stack workspace (the directory holding ``main.tf.json``)."""

    name = NAME

    def __init__(
        self,
        workspace: Path,
        *,
        binary: str | None = None,
        plugin_dir: str | None = None,
        apply_timeout_s: float = DEFAULT_APPLY_TIMEOUT_S,
        env: dict[str, str] | None = None,
    ) -> None:
        self.workspace = Path(workspace)
        self.binary = binary or find_binary()
        self.plugin_dir = plugin_dir if plugin_dir is not None else os.environ.get(
            "SKYC_TF_PLUGIN_DIR"
        )
        self.apply_timeout_s = apply_timeout_s
        self._env = {
            **os.environ,
            "TF_IN_AUTOMATION": "1",
            "TF_INPUT": "0",
            "CHECKPOINT_DISABLE": "1",
            **(env or {}),
        }
        self.last_log: Path | None = None

    # -- running ---------------------------------------------------------------------

    def _errors(self, op: str) -> AbstractContextManager[None]:
        return ERRORS.boundary(op=op, stack=self.workspace.name, binary=self.binary)

    def _log_path(self, op: str) -> Path:
        logs = self.workspace / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
        return logs / f"{stamp}-{op}.log"

    def _run(
        self,
        op: str,
        args: list[str],
        *,
        timeout_s: float,
        on_line: ProgressCallback | None = None,
        json_lines: bool = False,
    ) -> tuple[int, list[str], list[Diagnostic]]:
        """Run terraform; returns (exit code, stdout lines, error diagnostics). A run
        that lost the race for the state lock (:func:`lost_lock_race`) did nothing and
        runs again, after a short pause, up to :data:`LOCK_RACE_TRIES` times."""
        for attempt in range(1, LOCK_RACE_TRIES + 1):
            rc, lines, diags = self._run_once(op, args, timeout_s=timeout_s, on_line=on_line,
                                              json_lines=json_lines)
            if rc == 0 or attempt == LOCK_RACE_TRIES or not lost_lock_race(lines, diags):
                break
            time.sleep(0.5 * attempt)
        return rc, lines, diags

    def _run_once(
        self,
        op: str,
        args: list[str],
        *,
        timeout_s: float,
        on_line: ProgressCallback | None,
        json_lines: bool,
    ) -> tuple[int, list[str], list[Diagnostic]]:
        log_path = self._log_path(op)
        self.last_log = log_path
        cmd = [self.binary, *args]
        diagnostics: list[Diagnostic] = []
        lines: list[str] = []
        log_path.write_text("$ " + " ".join(cmd) + "\n")
        # terraform writes to the log file, not to a pipe: if skyc dies, a pipe
        # would kill terraform (SIGPIPE) mid-apply, losing what it was creating.
        with log_path.open("a") as out, log_path.open() as log:
            log.readline()
            with self._errors(op):
                proc = subprocess.Popen(
                    cmd,
                    cwd=self.workspace,
                    env=self._env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )
            timed_out = threading.Event()

            def stop() -> None:
                timed_out.set()
                proc.send_signal(signal.SIGINT)  # terraform stops cleanly and saves state
                try:
                    proc.wait(_KILL_GRACE_S)
                except subprocess.TimeoutExpired:
                    proc.kill()

            timer = threading.Timer(timeout_s, stop)
            timer.daemon = True
            timer.start()
            try:
                rc = self._follow(proc, log, lines, diagnostics, on_line, json_lines)
            except (KeyboardInterrupt, EngineInterrupted):
                stop()  # Ctrl-C: let terraform stop cleanly and save its state
                raise
            finally:
                timer.cancel()
        if timed_out.is_set():
            raise EngineError(
                f"terraform {op} did not finish within {timeout_s:.0f} s and was stopped",
                hint=f"see {log_path}; resources created so far are kept in the state",
            )
        return rc, lines, diagnostics

    def _follow(
        self,
        proc: subprocess.Popen[bytes],
        log: Any,
        lines: list[str],
        diagnostics: list[Diagnostic],
        on_line: ProgressCallback | None,
        json_lines: bool,
    ) -> int:
        """Read the log file as terraform writes it, until terraform exits."""
        partial = ""
        while True:
            chunk = log.readline()
            if chunk:
                partial += chunk
                if not partial.endswith("\n"):
                    continue
                line, partial = partial, ""
                lines.append(line.rstrip("\n"))
                if json_lines:
                    self._handle_json(line, diagnostics, on_line)
                continue
            rc = proc.poll()
            if rc is not None:
                rest = partial + log.read()
                for line in rest.splitlines():
                    lines.append(line)
                    if json_lines:
                        self._handle_json(line, diagnostics, on_line)
                return rc
            if interrupt_requested():
                raise EngineInterrupted("terraform was interrupted",
                                        hint="what it created so far is in its state")
            time.sleep(0.02)

    def _capture_json(self, op: str, args: list[str]) -> dict[str, Any]:
        """Run a read-only command whose stdout is one JSON document."""
        log_path = self._log_path(op)
        self.last_log = log_path
        with self._errors(op):
            proc = subprocess.run(
                [self.binary, *args], cwd=self.workspace, env=self._env, capture_output=True,
                text=True, timeout=600, stdin=subprocess.DEVNULL,
            )
        log_path.write_text(f"$ {self.binary} {' '.join(args)}\n{proc.stderr}")
        if proc.returncode != 0:
            raise EngineError(f"terraform {op} failed:\n{proc.stderr.strip()[-2000:]}")
        try:
            doc = json.loads(proc.stdout or "{}")
        except ValueError as exc:
            raise EngineError(f"terraform {op} printed invalid JSON: {exc}") from None
        if not isinstance(doc, dict):
            raise EngineError(f"terraform {op} printed JSON that is not an object")
        return doc

    @staticmethod
    def _handle_json(
        line: str, diagnostics: list[Diagnostic], on_line: ProgressCallback | None
    ) -> None:
        try:
            msg = json.loads(line)
        except ValueError:
            return
        if not isinstance(msg, dict):
            return
        diag = diagnostic(msg)
        if diag is not None:
            diagnostics.append(diag)
        if on_line is not None:
            progress = event(msg)
            if progress is not None:
                on_line(progress)

    def _fail(self, op: str, lines: list[str], diagnostics: list[Diagnostic]) -> ApplyFailed:
        if diagnostics:
            first = diagnostics[0]
            text = first.summary
            if first.detail:
                text += ": " + first.detail.strip()
        else:
            text = "\n".join(lines[-15:])
        return ApplyFailed(f"terraform {op} failed: {text}", diagnostics, log_file=self.last_log)

    # -- the protocol ------------------------------------------------------------------

    def init(self, migrate: bool = False) -> None:
        """``terraform init``; ``migrate``: the workspace was initialized for another
        backend before, whose state is copied to the one the stack names now."""
        args = ["init", "-input=false", "-no-color"]
        if migrate:
            args += ["-migrate-state", "-force-copy"]
        if self.plugin_dir:
            args.append(f"-plugin-dir={self.plugin_dir}")
        rc, lines, _ = self._run("init", args, timeout_s=600)
        if rc != 0:
            raise EngineError(
                "terraform init failed:\n" + "\n".join(lines[-20:]),
                hint=f"full output: {self.last_log}",
            )

    def prepare(self, stack: Stack) -> None:
        """Run ``init`` unless this workspace was initialized for the same providers
        and backend."""
        mark = self.workspace / _INIT_MARK
        key = init_key(stack)
        if not mark.exists() or mark.read_text() != key:
            # initialized before for other providers or another backend: the state
            # moves to the backend the stack names now (terraform copies it there)
            self.init(migrate=mark.exists())
            mark.parent.mkdir(parents=True, exist_ok=True)
            mark.write_text(key)

    def ensure_init(self) -> None:
        """Initialize a workspace that never was (e.g. before destroying it)."""
        if not (self.workspace / _INIT_MARK).exists():
            self.init()

    def plan(self, *, destroy: bool = False) -> StackDiff:
        args = ["plan", "-input=false", "-json", "-detailed-exitcode", f"-out={PLAN_FILE}",
                f"-lock-timeout={LOCK_TIMEOUT_S}s"]
        if destroy:
            args.append("-destroy")
        rc, lines, diags = self._run("plan", args, timeout_s=self.apply_timeout_s, json_lines=True)
        if rc not in (0, 2):
            raise self._fail("plan", lines, diags)
        doc = self._capture_json("show", ["show", "-json", "-no-color", PLAN_FILE])
        return StackDiff(
            changes=parse_plan_json(doc), plan_file=str(self.workspace / PLAN_FILE),
            exit_code=rc,
        )

    def apply(self, diff: StackDiff, progress: ProgressCallback | None = None) -> None:
        plan_file = diff.plan_file or str(self.workspace / PLAN_FILE)
        rc, lines, diags = self._run(
            "apply",
            ["apply", "-input=false", "-json", f"-lock-timeout={LOCK_TIMEOUT_S}s", plan_file],
            timeout_s=self.apply_timeout_s,
            on_line=progress,
            json_lines=True,
        )
        if rc != 0:
            raise self._fail("apply", lines, diags)

    def outputs(self) -> dict[str, Any]:
        doc = self._capture_json("output", ["output", "-json", "-no-color"])
        return {name: item.get("value") for name, item in sorted(doc.items())}

    def refresh(self) -> Refresh:
        """A refresh-only plan: every resource read back from the cloud, nothing changed."""
        name = REFRESH_PLAN_FILE.format(pid=os.getpid())
        saved = self.workspace / name
        rc, lines, diags = self._run(
            "refresh", ["plan", "-refresh-only", "-json", "-input=false", "-lock-timeout=60s",
                        f"-out={name}"],
            timeout_s=600, json_lines=True,
        )
        if rc != 0:
            saved.unlink(missing_ok=True)
            raise self._fail("refresh", lines, diags)
        gone = drift_deleted("\n".join(lines))
        try:
            read = self._capture_json("show", ["show", "-json", "-no-color", name])
        finally:
            saved.unlink(missing_ok=True)
        state = self._capture_json("show", ["show", "-json", "-no-color"])
        return Refresh(gone=gone, managed=managed_count(state),
                       resources=refreshed_resources(read))

    def destroy(self, progress: ProgressCallback | None = None) -> None:
        self.ensure_init()
        started = time.monotonic()
        rc, lines, diags = self._run(
            "destroy",
            ["destroy", "-input=false", "-json", "-auto-approve",
             f"-lock-timeout={LOCK_TIMEOUT_S}s"],
            timeout_s=self.apply_timeout_s,
            on_line=progress,
            json_lines=True,
        )
        if rc != 0:
            raise self._fail("destroy", lines, diags)
        if progress is not None:
            progress(ProgressEvent(kind="summary", elapsed_s=time.monotonic() - started,
                                   message="destroyed"))


def lost_lock_race(lines: list[str], diagnostics: list[Diagnostic]) -> bool:
    """Whether terraform failed to take the state lock while another terraform was
    taking or releasing it: the lock was held, and its holder's lock file was not there
    to be read (``open .terraform.tfstate.lock.info: no such file or directory``).
    terraform waits out ``-lock-timeout`` only for a holder it can name, so two
    refreshes of one stack at once (a controller and ``skyc status --refresh``) fail
    so now and then. Nothing was run: running again is safe."""
    text = "\n".join([*lines, *(f"{d.summary}\n{d.detail}" for d in diagnostics)])
    return "Error acquiring the state lock" in text and ".lock.info" in text


def init_key(stack: Stack) -> str:
    """Changes when terraform must be initialized again (providers or backend)."""
    doc = terraform_json.to_terraform(stack)
    relevant = {"terraform": doc.get("terraform"), "providers": sorted(doc.get("provider", {}))}
    return hashlib.sha256(json.dumps(relevant, sort_keys=True).encode()).hexdigest()


STACK_FILE = terraform_json.STACK_FILE


def open_engine(workspace: Path, env: dict[str, str] | None = None) -> TerraformEngine:
    return TerraformEngine(workspace, env=env)


def files(stack: Stack) -> dict[str, str]:
    return terraform_json.files(stack)


def write(stack: Stack, workspace: Path, values: dict[str, Any]) -> Path:
    """``main.tf.json`` and, when the stack has inputs, ``terraform.tfvars.json``."""
    for name, text in files(stack).items():
        _write_if_changed(workspace / name, text)
    vars_path = workspace / terraform_json.VARS_FILE
    if values:
        _write_if_changed(vars_path, terraform_json.dumps(values))
    elif vars_path.exists():
        vars_path.unlink()
    return workspace / STACK_FILE


def _write_if_changed(path: Path, text: str) -> None:
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def previews_offline() -> bool:
    """terraform's plan reads the cloud (it needs credentials)."""
    return False


def unavailable() -> str | None:
    """Why terraform cannot run here (None when it can)."""
    try:
        find_binary()
    except EngineError as exc:
        return f"{exc} ({exc.hint})" if exc.hint else str(exc)
    return None
