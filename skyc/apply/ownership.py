"""Acting on another owner's cluster: destroy, stop or run a job on it.

Every cluster record carries its owner (the config's ``user:`` of whoever created it,
else ``user@host``: :mod:`skyc.model.owner`). A command that would end or use a cluster
of someone else's in a shared state asks first, naming the owner, or needs ``--yes``;
where it cannot ask (stdin is not a terminal) it refuses, naming the owner and the flag.
What it then does is recorded as done by the caller (:func:`record_override`). A
cluster recorded before owners were, or not recorded at all, is the caller's own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

from skyc.errors import ConfigError

if TYPE_CHECKING:
    from skyc.state.database import StateDB

Doing = Literal["destroy", "stop", "exec"]
# A yes/no question put to the user; None where none can be put (stdin not a terminal).
Ask = Callable[[str], bool]

_VERB: dict[str, str] = {"destroy": "destroy", "stop": "stop", "exec": "run a job on"}
_DONE: dict[str, str] = {"destroy": "destroyed", "stop": "stopped", "exec": "ran a job on"}


def other_owner(cluster: str, db: StateDB) -> str | None:
    """The cluster's owner when that is someone other than the caller; None when it is
    the caller's (or recorded before owners were, or not recorded)."""
    from skyc.state.database import owned_by

    record = db.get_cluster(cluster)
    if record is None or owned_by(record.owner, db.caller()):
        return None
    return record.owner


def check_owner(cluster: str, doing: Doing, yes: bool, ask: Ask | None,
                db: StateDB | None = None) -> str | None:
    """Go ahead with ``doing`` on ``cluster``: at once when it is the caller's; when it
    is another owner's, with ``yes`` or when ``ask`` says yes (refused where ``ask`` is
    None: stdin is not a terminal). Returns that other owner (None: the caller's own),
    for :func:`record_override`; a :class:`~skyc.errors.ConfigError` naming the owner
    and ``--yes`` when refused."""
    from skyc.state.database import StateDB

    state = db if db is not None else StateDB()
    try:
        owner = other_owner(cluster, state)
        me = state.caller() if owner is not None else ""
    finally:
        if db is None:
            state.close()
    if owner is None or yes:
        return owner
    verb = _VERB[doing]
    hint = (f"pass --yes to {verb} it anyway (recorded as done by {me}), or leave it to "
            f"{owner}")
    if ask is None:
        raise ConfigError(f"cluster {cluster} belongs to {owner}: refusing to {verb} it "
                          "without --yes (stdin is not a terminal, so skyc cannot ask)",
                          hint=hint)
    if not ask(f"cluster {cluster} belongs to {owner}; {verb} it anyway?"):
        raise ConfigError(f"cluster {cluster} belongs to {owner}: left as it is",
                          hint=hint)
    return owner


def record_override(cluster: str, doing: Doing, owner: str, db: StateDB | None = None) -> None:
    """Record that the caller did ``doing`` to ``owner``'s cluster (an ``override``
    event, the caller as its actor). A destroyed cluster's record and events are gone:
    the event written after that is what remains of who destroyed it."""
    from skyc.state.database import StateDB

    state = db if db is not None else StateDB()
    try:
        me = state.caller()
        state.add_event(cluster, "override", f"{me} {_DONE[doing]} the cluster of {owner}",
                        {"owner": owner, "actor": me, "doing": doing}, actor=me)
    finally:
        if db is None:
            state.close()


__all__ = ["Ask", "Doing", "check_owner", "other_owner", "record_override"]
