"""The Pulumi engine: the Automation API (``pulumi.automation``) on a cluster workspace.

The workspace holds the generated program (``__main__.py``, ``Pulumi.yaml``), the
stack's input values (``pulumi-inputs.json``: public values only), the secrets
passphrase (``keys/pulumi-passphrase``, 0600; never in the stack or the
program) and ``logs/`` (one file per run). State goes to ``file://$SKYC_HOME/pulumi``
unless the config's ``pulumi.backend_url`` names another backend (s3://, gs://,
azblob://, Pulumi Cloud). A preview, up, refresh or destroy stops as on Ctrl-C when
this thread's engine commands are interrupted (:mod:`skyc.stacks.pulumi_command`).
The ``pulumi`` CLI is found on PATH, or in
``$SKYC_PULUMI_ROOT/bin``; without it nothing is created and the error says how
to install it. ``plan`` of a stack without a CLI is the offline preview
(:mod:`skyc.stacks.pulumi_preview`).

The Automation API is called only inside the engine's error boundaries: :data:`ERRORS`
for the CLI and the stack's workspace (opening the stack, its config, its outputs),
where a failing command is an EngineError, and :data:`UPDATE_ERRORS` for preview, up,
refresh and destroy, where it is an :class:`~skyc.errors.ApplyFailed` carrying the
errors the engine reported (the targets classify those).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from skyc.errors import ApplyFailed, EngineError, EngineInterrupted
from skyc.model.diagnostics import Diagnostic
from skyc.model.stack import Stack
from skyc.settings.config import load_config, skyc_home
from skyc.stacks import pulumi_events
from skyc.stacks.engine import ProgressCallback, Refresh, StackDiff, interrupt_requested
from skyc.stacks.engine_errors import ErrorTable, Rule
from skyc.stacks.pulumi_python import PROJECT, PROJECT_FILE, files
from skyc.stacks.pulumi_python import SCHEMA_FAMILY as SCHEMA_FAMILY

NAME = "pulumi"
STACK_FILE = PROJECT_FILE
INPUTS_FILE = "pulumi-inputs.json"
PASSPHRASE_FILE = "keys/pulumi-passphrase"
MIN_VERSION = "3.100.0"
INSTALL_HINT = (
    "install the Pulumi CLI (https://www.pulumi.com/docs/iac/download-install/, e.g. "
    "`curl -fsSL https://get.pulumi.com | sh`) and put it on PATH, or set SKYC_PULUMI_ROOT "
    "to the directory holding bin/pulumi; `skyc plan --engine pulumi` works without it"
)

# Every exception class pulumi.automation defines is a row or a subclass of one (a test
# checks); CommandError's subclasses (ConcurrentUpdateError, StackNotFoundError, ...)
# say what went wrong in their text.
ERRORS = ErrorTable(NAME, {
    "builtins.FileNotFoundError": Rule(EngineError, "the pulumi CLI was not found (to "
                                       "{doing})", hint=INSTALL_HINT),
    "builtins.OSError": Rule(EngineError, "pulumi could not {doing}: {exc}"),
    "pulumi.automation.InvalidVersionError": Rule(
        EngineError, f"the pulumi CLI is too old: {{exc}} (skyc needs >= {MIN_VERSION})",
        hint=INSTALL_HINT),
    "pulumi.automation.CommandError": Rule(EngineError, "pulumi could not {doing}: {exc}"),
})
UPDATE_ERRORS = ERRORS.with_rules({
    "pulumi.automation.CommandError": Rule(ApplyFailed, "pulumi {op} failed: {first}"),
})


def _root() -> str | None:
    """The directory whose ``bin/pulumi`` to run, or None for the one on PATH."""
    explicit = os.environ.get("SKYC_PULUMI_ROOT")
    if explicit:
        return explicit
    found = shutil.which("pulumi")
    return str(Path(found).resolve().parent.parent) if found else None


def previews_offline() -> bool:
    """Without a Pulumi CLI, plan is the offline preview under the mock runtime: it
    reads no cloud, so it needs no credentials (CI shows reviewers what would be
    created)."""
    return _root() is None


def unavailable() -> str | None:
    """Pulumi plans offline (no CLI needed); only its SDK must be importable."""
    try:
        import pulumi  # noqa: F401
    except ImportError:
        return "the Pulumi SDK is not installed (pip install 'skyc[pulumi]')"
    return None


def write(stack: Stack, workspace: Path, values: dict[str, Any]) -> Path:
    """The program, the project file and the input values."""
    for name, text in files(stack).items():
        _write_if_changed(workspace / name, text)
    _write_if_changed(workspace / INPUTS_FILE, json.dumps(values, indent=2, sort_keys=True) + "\n")
    return workspace / STACK_FILE


def _write_if_changed(path: Path, text: str) -> None:
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def passphrase(workspace: Path) -> Path:
    """The workspace's secrets passphrase file, created 0600 on first use."""
    path = workspace / PASSPHRASE_FILE
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_urlsafe(32) + "\n")
    return path


def backend_url(configured: str | None) -> str:
    if configured:
        return configured
    state = skyc_home() / "pulumi"
    state.mkdir(parents=True, exist_ok=True)
    return f"file://{state}"


class PulumiEngine:
    """Runs one stack workspace through the Automation API."""

    name = NAME

    def __init__(self, workspace: Path, *, backend: str | None = None,
                 env: dict[str, str] | None = None) -> None:
        self.workspace = Path(workspace)
        self.stack_name = self.workspace.name
        self._backend = backend
        self._extra_env = dict(env or {})
        self._prepared: Stack | None = None
        self.last_log: Path | None = None

    # -- the Automation API ------------------------------------------------------------

    def _env(self) -> dict[str, str]:
        backend = self._backend or load_config().pulumi.backend_url
        return {
            "PULUMI_BACKEND_URL": backend_url(backend),
            "PULUMI_CONFIG_PASSPHRASE_FILE": str(passphrase(self.workspace)),
            "PULUMI_SKIP_UPDATE_CHECK": "true",
            **self._extra_env,
        }

    def _errors(self, doing: str) -> AbstractContextManager[None]:
        """The boundary of a call to the CLI or the workspace; ``doing`` names it with
        the stack (``open stack gpu``)."""
        return ERRORS.boundary(doing=doing, stack=self.stack_name)

    def _update_errors(self, op: str,
                       diagnostics: list[Diagnostic]) -> AbstractContextManager[None]:
        """The boundary of preview, up, refresh or destroy: its ApplyFailed carries the
        ``diagnostics`` gathered so far and the run's log."""
        return UPDATE_ERRORS.boundary(op=op, doing=f"run {op} on stack {self.stack_name}",
                                      stack=self.stack_name, diagnostics=diagnostics,
                                      log_file=self.last_log)

    def _stack(self) -> Any:
        from pulumi import automation as auto

        from skyc.stacks.pulumi_command import InterruptibleCommand

        env = self._env()
        with self._errors(f"open stack {self.stack_name}"):
            opts = auto.LocalWorkspaceOptions(
                work_dir=str(self.workspace), pulumi_command=InterruptibleCommand(root=_root()),
                env_vars=env, secrets_provider="passphrase",
            )
            return auto.create_or_select_stack(
                stack_name=self.stack_name, work_dir=str(self.workspace), opts=opts)

    def _log(self, op: str) -> Callable[[str], None]:
        logs = self.workspace / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
        path = logs / f"{stamp}-pulumi-{op}.log"
        path.write_text(f"pulumi {op} of stack {self.stack_name} ({PROJECT})\n")
        self.last_log = path

        def write(text: str) -> None:
            with path.open("a") as fh:
                fh.write(text.rstrip("\n") + "\n")

        return write

    def _run(self, op: str, call: Callable[[Any, Callable[[Any], None], Callable[[str], None]],
                                            Any], progress: ProgressCallback | None) -> Any:
        if interrupt_requested():
            raise EngineInterrupted(f"pulumi {op} was interrupted before it started",
                                    hint="nothing was changed")
        log = self._log(op)
        diagnostics: list[Diagnostic] = []
        stack = self._stack()

        def on_event(event: Any) -> None:
            log(json.dumps(pulumi_events.describe(event), sort_keys=True))
            diag = pulumi_events.diagnostic(event)
            if diag is not None:
                diagnostics.append(diag)
            step = pulumi_events.progress(event)
            if step is not None and progress is not None:
                progress(step)

        try:
            with self._update_errors(op, diagnostics):
                return call(stack, on_event, log)
        except EngineInterrupted as exc:
            log(f"interrupted: {exc.message}")
            raise

    # -- the protocol ------------------------------------------------------------------

    def init(self) -> None:
        self._stack()

    def prepare(self, stack: Stack) -> None:
        """Open (or create) the stack and set its config from the input values.

        Without a CLI nothing is opened: ``plan`` then previews offline, and
        anything that would change resources says how to install the CLI.
        """
        from pulumi import automation as auto

        self._prepared = stack
        if _root() is None:
            return
        values = self._values()
        opened = self._stack()
        config = {f"{PROJECT}:{k}": auto.ConfigValue(value=str(v)) for k, v in values.items()}
        if config:
            with self._errors(f"set the config of stack {self.stack_name}"):
                opened.set_all_config(config)

    def _values(self) -> dict[str, Any]:
        path = self.workspace / INPUTS_FILE
        values: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
        return values

    def plan(self, *, destroy: bool = False) -> StackDiff:
        if _root() is None and self._prepared is not None and not destroy:
            from skyc.stacks.pulumi_preview import preview

            return preview(self._prepared, self._values())
        changes: list[Any] = []

        def call(stack: Any, on_event: Callable[[Any], None], log: Callable[[str], None]) -> Any:
            def collect(event: Any) -> None:
                on_event(event)
                change = pulumi_events.change(event)
                if change is not None:
                    changes.append(change)
            return stack.preview(on_event=collect, on_output=log, diff=False)

        self._run("preview", call, None)
        return StackDiff(changes=sorted(changes, key=lambda c: c.address))

    def apply(self, diff: StackDiff, progress: ProgressCallback | None = None) -> None:
        self._run("up", lambda stack, on_event, log: stack.up(on_event=on_event, on_output=log),
                  progress)

    def outputs(self) -> dict[str, Any]:
        stack = self._stack()
        with self._errors(f"read the outputs of stack {self.stack_name}"):
            values = stack.outputs()
        return {name: item.value for name, item in sorted(values.items())}

    def refresh(self) -> Refresh:
        """Refresh the state from the cloud; ``gone``: resources it no longer has."""
        def call(stack: Any, on_event: Callable[[Any], None], log: Callable[[str], None]) -> Any:
            before = pulumi_events.resource_urns(stack.export_stack())
            stack.refresh(on_event=on_event, on_output=log)
            read = stack.export_stack()
            after = pulumi_events.resource_urns(read)
            return sorted(before - after), len(after), pulumi_events.refreshed_resources(read)

        gone, managed, resources = self._run("refresh", call, None)
        return Refresh(gone=gone, managed=managed, resources=resources)

    def destroy(self, progress: ProgressCallback | None = None) -> None:
        self._run("destroy",
                  lambda stack, on_event, log: stack.destroy(on_event=on_event, on_output=log),
                  progress)


def open_engine(workspace: Path, env: dict[str, str] | None = None) -> PulumiEngine:
    return PulumiEngine(workspace, env=env)


__all__ = ["NAME", "SCHEMA_FAMILY", "STACK_FILE", "PulumiEngine", "files", "open_engine",
           "unavailable", "write"]
