"""``skyc serve logs``: a replica's launch and run output, or the controller's log
(the controller and the load balancer are one process: one log)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from skyc.errors import ConfigError, SkycError
from skyc.serve import replicas
from skyc.serve.daemon import controller_pid, log_file
from skyc.serve.store import ServeStore

Write = Callable[[bytes], None]
FOLLOW_POLL_S = 0.3


def _copy(path: Path, offset: int, write: Write) -> int:
    try:
        with path.open("rb") as fh:
            fh.seek(offset)
            data = fh.read()
    except OSError:
        return offset
    if data:
        write(data)
    return offset + len(data)


def controller_log(name: str, follow: bool, write: Write) -> None:
    """The controller's log; with ``follow``, until the controller exits."""
    from skyc.serve.service import require

    with ServeStore() as store:
        require(store, name)
    path = log_file(name)
    offset = _copy(path, 0, write)
    while follow and controller_pid(name) is not None:
        time.sleep(FOLLOW_POLL_S)
        offset = _copy(path, offset, write)
    _copy(path, offset, write)


def replica_log(name: str, replica: int, follow: bool, write: Write) -> None:
    """How the replica was launched, then its run's output: from its node while it has
    one, else as kept when it was torn down."""
    from skyc.model.workspace import recorded_cluster
    from skyc.runtime import tail_logs
    from skyc.serve.service import require

    with ServeStore() as store:
        require(store, name)
        found = [r for r in store.replicas(name) if r.id == replica]
        if not found:
            ids = ", ".join(str(r.id) for r in store.replicas(name)) or "none"
            raise ConfigError(f"service {name} has no replica {replica} (replicas: {ids})",
                              hint=f"see them with `skyc serve status {name}`")
    r = found[0]
    _copy(replicas.launch_log(name, replica), 0, write)
    info = recorded_cluster(r.cluster) if r.live else None
    if info is not None and r.job_id is not None:
        try:
            tail_logs(info, r.job_id, follow=follow, on_output=write)
            return
        except SkycError:
            if replicas.cluster_left(r.cluster):
                raise
    _copy(replicas.saved_log(name, replica), 0, write)
