"""Every error skyc raises on purpose.

Libraries raise these; only the CLI formats them. A user never sees a
traceback for a mistake of theirs: the CLI prints ``str(error)`` (plus the
``hint`` when there is one) and exits with ``error.exit_code``.

The tree::

    SkycError                       root; .hint, .exit_code
    ├── TaskSpecError               a task YAML is invalid; .problems: list[SpecProblem]
    │                               (file, field path, YAML line, message, did-you-mean)
    ├── ConfigError                 $SKYC_HOME/config.yaml or a CLI flag is invalid
    ├── CatalogError                a price catalog cannot be read
    ├── StorageError                a bucket a task names cannot be used as written
    ├── InfeasibleError             no offer satisfies a request; says what is missing
    │                               and the nearest offers
    ├── UnsupportedFeature          valid input that skyc (or one target) cannot do yet
    │   └── Refused                 a task that cannot run as written; .problems
    ├── ProvisionError              a cloud refused to create a resource;
    │                               .code, .scope (placement|zone|region|cloud),
    │                               .retryable, .location (where it happened)
    ├── FailoverExhausted           every placement tried failed; .attempts
    ├── Interrupted                 provisioning stopped by Ctrl-C (exit 130); the hint
    │                               says how to resume or clean up
    ├── PolicyViolation             a placement breaks the policy; nothing was applied
    ├── EngineError                 the IaC engine (terraform, tofu, pulumi) failed or
    │   │                           is missing, for a reason other than provisioning
    │   ├── ApplyFailed             it ran and the cloud refused something;
    │   │                           .diagnostics, .log_file
    │   └── EngineInterrupted       stopped on request, as Ctrl-C stops it
    ├── StateError                  the local state database or a cluster lock
    │   ├── LockTimeout             another skyc holds the cluster's lock
    │   └── StalePlan               a saved plan no longer matches its inputs; .moved
    ├── RuntimeAgentError           sync, setup or run on the nodes failed
    │   ├── TransportError          a node cannot be reached (SSH, subprocess)
    │   └── JobFailed               the job ran and a node exited non-zero; .exit_code
    └── managed jobs:
        ├── Cancelled               the job was cancelled while its controller waited
        ├── LeaseLost               another controller took the job's lease
        ├── LeaseHeld               another controller supervises the job
        ├── AlreadyRunning          a controller already serves this SKYC_HOME (exit 0)
        └── ControllerUnreachable   the controller cluster does not answer

Every class is defined here (a test fails on a SkycError subclass defined elsewhere).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, NamedTuple

if TYPE_CHECKING:
    from pathlib import Path

    from skyc.apply.failover import Attempt
    from skyc.model.diagnostics import Diagnostic

Scope = Literal["placement", "zone", "region", "cloud"]


class SkycError(Exception):
    """Root of every error skyc raises on purpose."""

    exit_code: int = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message


class SpecProblem(NamedTuple):
    """One thing wrong in a task file."""

    file: str
    path: str
    message: str
    line: int | None = None
    suggestion: str | None = None
    severity: Literal["error", "warning"] = "error"

    def render(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
        text = f"{where}: {self.path}: {self.message}" if self.path else f"{where}: {self.message}"
        if self.suggestion:
            text += f" (did you mean '{self.suggestion}'?)"
        return text


class TaskSpecError(SkycError):
    """A task YAML is invalid. Carries every problem found, not only the first."""

    def __init__(self, problems: list[SpecProblem], *, hint: str | None = None) -> None:
        self.problems = list(problems)
        lines = [p.render() for p in self.problems] or ["invalid task"]
        super().__init__("\n".join(lines), hint=hint)


class ConfigError(SkycError):
    """The user config file or a command-line flag is invalid."""


class StorageError(SkycError):
    """A bucket or volume a task names cannot be used as written: its name, store,
    source or mode, or the bucket itself (missing, not readable)."""


class CatalogError(SkycError):
    """A price catalog is missing or malformed."""


class InfeasibleError(SkycError):
    """No offer in the enabled infra satisfies a task's resources."""


class UnsupportedFeature(SkycError):
    """Valid input that skyc, or the chosen target, does not support."""


class ProvisionFailure(NamedTuple):
    """Structured detail of a provisioning failure (used by failover)."""

    code: str
    scope: Scope
    retryable: bool
    cloud: str
    region: str | None = None
    zone: str | None = None
    resource: str | None = None
    raw: str = ""  # the engine's own words: left out of repr

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={getattr(self, k)!r}" for k in self._fields if k != "raw")
        return f"ProvisionFailure({shown})"


class ProvisionError(SkycError):
    """A cloud refused to create a resource (capacity, quota, auth, bad parameter).

    ``scope`` says what to block before retrying elsewhere: the ``zone``, the
    ``region`` or the whole ``cloud``; ``placement`` is a transient error (throttling,
    a resource just created not yet visible to the next call), for which the same
    placement is tried again before it is passed over. ``retryable`` is False for
    errors that another placement cannot fix (bad parameters, auth).
    """

    def __init__(self, message: str, failure: ProvisionFailure, *, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.failure = failure

    @property
    def code(self) -> str:
        return self.failure.code

    @property
    def scope(self) -> Scope:
        return self.failure.scope

    @property
    def retryable(self) -> bool:
        return self.failure.retryable

    @property
    def transient(self) -> bool:
        """Throttling or eventual consistency: the same request may work in a moment."""
        return self.failure.scope == "placement"


class EngineError(SkycError):
    """The IaC engine failed, or is not installed."""


class StateError(SkycError):
    """The local state database is unreadable or inconsistent."""


class LockTimeout(StateError):
    """Another skyc process holds the cluster's lock."""


class RuntimeAgentError(SkycError):
    """Sync, setup or run on the nodes failed."""


class TransportError(RuntimeAgentError):
    """A node cannot be reached."""


class JobFailed(RuntimeAgentError):
    """The job ran and at least one node exited non-zero."""

    def __init__(self, message: str, job_exit_code: int, *, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.exit_code = job_exit_code if 0 < job_exit_code < 256 else 1


class ApplyFailed(EngineError):
    """The engine ran but the cloud refused something; ``diagnostics`` holds the details.

    Compilers classify the diagnostics into a ProvisionError; when they cannot,
    this error reaches the user as an engine failure with the first message.
    """

    def __init__(
        self, message: str, diagnostics: list[Diagnostic], *, log_file: Path | None = None
    ) -> None:
        hint = f"full engine output: {log_file}" if log_file else None
        super().__init__(message, hint=hint)
        self.diagnostics = diagnostics
        self.log_file = log_file

class EngineInterrupted(EngineError):
    """An engine command was stopped on request before it finished, the way Ctrl-C
    stops it: what it created so far is in the engine's state."""

class StalePlan(StateError):
    """The saved plan no longer matches its inputs; ``moved`` lists what changed."""

    def __init__(self, path: Path, moved: list[str]) -> None:
        super().__init__(
            f"{path}: the plan is stale, nothing was applied: " + "; ".join(moved),
            hint="run `skyc plan ... -o FILE` again and review the new plan")
        self.moved = moved

class PolicyViolation(SkycError):
    """The placement breaks the policy; nothing was applied for it."""

class Interrupted(SkycError):
    """Provisioning was interrupted (Ctrl-C); the hint says how to resume or clean up."""

    exit_code = 130

class FailoverExhausted(SkycError):
    """Every placement tried failed; ``attempts`` says what happened to each."""

    def __init__(self, message: str, attempts: list[Attempt], *, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.attempts = attempts

class Cancelled(SkycError):
    """The job was cancelled while the controller waited on something."""

class LeaseLost(SkycError):
    """Another controller took the job's lease: this one stops supervising."""

class LeaseHeld(SkycError):
    """Another controller supervises the job."""

class AlreadyRunning(SkycError):
    """Another controller process serves this SKYC_HOME."""

    exit_code = 0

class ControllerUnreachable(SkycError):
    """The controller cluster is recorded but does not answer."""


class Refused(UnsupportedFeature):
    """A task that cannot run as written; ``problems`` lists why, one per field."""

    def __init__(self, subject: str, problems: list[str]) -> None:
        self.problems = list(problems)
        lines = "\n".join(f"  {p}" for p in self.problems)
        super().__init__(f"{subject} cannot run, nothing was created:\n{lines}",
                         hint="fix the fields named above and run the command again")


__all__ = [
    "AlreadyRunning",
    "ApplyFailed",
    "Cancelled",
    "CatalogError",
    "ConfigError",
    "ControllerUnreachable",
    "EngineError",
    "EngineInterrupted",
    "FailoverExhausted",
    "InfeasibleError",
    "Interrupted",
    "JobFailed",
    "LeaseHeld",
    "LeaseLost",
    "LockTimeout",
    "PolicyViolation",
    "ProvisionError",
    "ProvisionFailure",
    "Refused",
    "RuntimeAgentError",
    "Scope",
    "SkycError",
    "SpecProblem",
    "StalePlan",
    "StateError",
    "TaskSpecError",
    "TransportError",
    "UnsupportedFeature",
]
