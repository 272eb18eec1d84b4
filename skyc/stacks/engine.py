"""The engine protocol (prepare / plan / apply / outputs / refresh / destroy) and its
typed results."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from skyc.model.stack import Stack

Action = Literal["create", "update", "replace", "delete", "no-op", "read"]


class ResourceChange(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    address: str                 # e.g. aws_instance.node_1, or a Pulumi URN
    type: str
    action: Action
    inputs: dict[str, Any] | None = None  # an offline preview's resource arguments


class StackDiff(BaseModel):
    """What applying the stack would change. ``plan_file`` is the saved plan."""

    model_config = ConfigDict(extra="forbid")

    changes: list[ResourceChange] = Field(default_factory=list)
    plan_file: str | None = None
    exit_code: int | None = None  # plan -detailed-exitcode: 0 no changes, 2 changes
    offline: bool = False         # a preview computed without the engine (no cloud read)

    def of(self, action: Action) -> list[ResourceChange]:
        return [c for c in self.changes if c.action == action]

    @property
    def has_changes(self) -> bool:
        return any(c.action not in ("no-op", "read") for c in self.changes)

    def summary(self) -> dict[str, int]:
        """Counts per action, e.g. ``{"create": 3, "no-op": 10}``."""
        counts: dict[str, int] = {}
        for change in self.changes:
            counts[change.action] = counts.get(change.action, 0) + 1
        return dict(sorted(counts.items()))


class ProgressEvent(BaseModel):
    """One step of an apply or destroy, for a live status display."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["start", "progress", "complete", "errored", "summary", "message"]
    address: str | None = None
    action: str | None = None
    elapsed_s: float | None = None
    message: str = ""


ProgressCallback = Callable[[ProgressEvent], None]


class RefreshedResource(BaseModel):
    """One resource as the engine read it back: its address, its engine type and its
    attributes (held in memory only, never stored: they may hold sensitive values)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    address: str
    type: str
    values: dict[str, Any] = Field(default_factory=dict)


class Refresh(BaseModel):
    """What the engine found reading the stack's resources back: ``gone`` were deleted
    outside skyc; ``managed`` is how many resources its state holds; ``resources``
    are those still there, as read (empty where the engine does not report them)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    gone: list[str] = Field(default_factory=list)
    managed: int = 0
    resources: list[RefreshedResource] = Field(default_factory=list)


class Engine(Protocol):
    """Drives one stack workspace."""

    name: str
    workspace: Path

    def init(self) -> None: ...

    def prepare(self, stack: Stack) -> None:
        """Make the workspace ready for ``stack`` (init only when it is needed)."""
        ...

    def plan(self, *, destroy: bool = False) -> StackDiff: ...

    def apply(self, diff: StackDiff, progress: ProgressCallback | None = None) -> None: ...

    def outputs(self) -> dict[str, Any]: ...

    def refresh(self) -> Refresh: ...

    def destroy(self, progress: ProgressCallback | None = None) -> None: ...


class _Interrupt(threading.local):
    event: threading.Event | None = None


_interrupt = _Interrupt()


@contextlib.contextmanager
def interruptible(event: threading.Event) -> Iterator[None]:
    """Inside, an engine command run by this thread is stopped as on Ctrl-C once
    ``event`` is set, and raises :class:`EngineInterrupted`. Other threads' commands
    are not affected."""
    previous, _interrupt.event = _interrupt.event, event
    try:
        yield
    finally:
        _interrupt.event = previous


def interrupt_requested() -> bool:
    """True when this thread's engine commands were asked to stop."""
    event = _interrupt.event
    return event is not None and event.is_set()
