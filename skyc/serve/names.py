"""Where a service's files live, its name, its replicas' cluster names, and ports.

``$SKYC_HOME/serve/services.db`` holds every service's state (:mod:`skyc.serve.store`);
``$SKYC_HOME/serve/<name>/`` holds the task as launched, the controller's lock and logs,
and the saved logs of replicas that are gone.
"""

from __future__ import annotations

import contextlib
import random
import re
import secrets
import socket
from collections.abc import Collection
from pathlib import Path

from skyc.errors import ConfigError, SkycError
from skyc.state.service_claims import serve_root as serve_root

# As SkyPilot's: lower-case letters, digits and '-', starting with a letter (replica
# clusters are named ``<service>-<id>``, and cluster names become cloud resource names).
_NAME = re.compile(r"^[a-z]([-a-z0-9]{0,28}[a-z0-9])?$")
HOST = "127.0.0.1"
# The endpoints take ports from 30001 up (SkyPilot's), the replicas of local services
# from 20001 up: both below Linux's ephemeral range (32768-60999), so no outgoing
# connection holds one.
ENDPOINT_PORTS = range(30001, 31000)
REPLICA_PORTS = range(20001, 30000)


def service_dir(name: str) -> Path:
    return serve_root() / check_service_name(name)


def check_service_name(name: str) -> str:
    if not _NAME.match(name):
        raise ConfigError(
            f"invalid service name {name!r}",
            hint="use 1-30 lower-case letters, digits and '-', starting with a letter "
            "and not ending with '-'")
    return name


def new_service_name(taken: Collection[str]) -> str:
    """``skyc-service-xxxx`` (SkyPilot's ``sky-service-xxxx``), not one of ``taken``."""
    while True:
        name = f"skyc-service-{secrets.token_hex(2)}"
        if name not in taken:
            return name


def replica_cluster(service: str, replica_id: int) -> str:
    """The cluster of a replica, as SkyPilot names it: ``<service>-<id>``."""
    return f"{service}-{replica_id}"


def endpoint(port: int, secure: bool = False) -> str:
    """A service's endpoint (``https`` with TLS) or a replica's."""
    return f"{'https' if secure else 'http'}://{HOST}:{port}"


def _free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # As the endpoint binds: a port whose old connections linger (TIME_WAIT) is free.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, port))
        except OSError:
            return False
    return True


def free_port(ports: range, taken: Collection[int]) -> int:
    """A port of ``ports`` not in ``taken`` that nothing listens on now, tried in a
    random order: services of other stores on this machine (another SKYC_HOME, another
    user) know nothing of ``taken``, and two that start at once would otherwise both
    find the lowest port free before either binds it."""
    candidates = [p for p in ports if p not in taken]
    random.SystemRandom().shuffle(candidates)
    with contextlib.suppress(StopIteration):
        return next(p for p in candidates if _free(p))
    raise SkycError(f"no free port on {HOST} in {ports.start}-{ports.stop - 1}",
                    hint="take down services you no longer need (`skyc serve down`)")
