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
    ├── InfeasibleError             no offer satisfies a request; says what is missing
    │                               and the nearest offers
    ├── UnsupportedFeature          valid input that skyc (or one target) cannot do yet
    ├── ProvisionError              a cloud refused to create a resource;
    │                               .code, .scope (placement|zone|region|cloud),
    │                               .retryable, .location (where it happened)
    ├── EngineError                 the IaC engine (terraform, tofu, pulumi) failed or
    │                               is missing, for a reason other than provisioning
    ├── StateError                  the local state database or a cluster lock
    │   └── LockTimeout             another skyc holds the cluster's lock
    └── RuntimeAgentError           sync, setup or run on the nodes failed
        ├── TransportError          a node cannot be reached (SSH, subprocess)
        └── JobFailed               the job ran and a node exited non-zero; .exit_code
"""

from __future__ import annotations

from typing import Literal, NamedTuple

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


__all__ = [
    "CatalogError",
    "ConfigError",
    "EngineError",
    "InfeasibleError",
    "JobFailed",
    "LockTimeout",
    "ProvisionError",
    "ProvisionFailure",
    "RuntimeAgentError",
    "Scope",
    "SkycError",
    "SpecProblem",
    "StateError",
    "TaskSpecError",
    "TransportError",
    "UnsupportedFeature",
]
