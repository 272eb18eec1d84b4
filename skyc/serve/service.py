"""``skyc serve up``, ``update`` and ``down``: what the commands do, apart from printing.

``up`` checks the task (its ``service:`` section, ``local`` infra), records the
service (``CONTROLLER_INIT``, version 1) with its endpoint's port, keeps a copy of
the task as loaded under ``$SKYC_HOME/serve/<name>/task.yaml`` (replicas launched
later run the task as it was at ``up``), and starts the service's controller, which
launches the replicas. ``update`` checks the new task as ``up`` does, keeps its copy
as ``task-v<N>.yaml`` and records version N for the controller, which moves the
replicas to it (:mod:`skyc.serve.rollout`). ``down`` asks the controller to take the
service down and waits for it; with no controller running it tears the replicas
down itself.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skyc.errors import ConfigError, SkycError, UnsupportedFeature
from skyc.serve import knobs
from skyc.serve.daemon import controller_pid
from skyc.serve.names import (
    ENDPOINT_PORTS,
    check_service_name,
    endpoint,
    free_port,
    new_service_name,
    service_dir,
)
from skyc.serve.records import Replica, Service
from skyc.serve.rollout import MODES
from skyc.serve.spec import ServiceConfig, check_local, service_config
from skyc.serve.store import ServeStore
from skyc.state.service_claims import db_path

if TYPE_CHECKING:
    from skyc.task import Task

TASK_COPY = "task.yaml"
TASK_VERSION = "task-v{version}.yaml"   # the task of each version after the first
Progress = Callable[[str], None]


@dataclass(frozen=True)
class Prepared:
    """A service checked and ready to start."""

    name: str | None
    file: str
    task_doc: dict[str, Any]
    envs: dict[str, str]
    config: ServiceConfig
    warnings: list[str]

    def summary(self) -> str:
        c = self.config
        return (f"{self.name or 'a new service'}: {c.scaling.describe()} of {self.file} on "
                f"local, readiness {c.readiness.describe()}, {c.policy} load balancing"
                + (", HTTPS" if c.tls else ""))


def prepare(task_path: Path, name: str | None, envs: Mapping[str, str],
            infra: str | None = None) -> Prepared:
    """Load and check the task: a TaskSpecError, ConfigError or UnsupportedFeature
    naming the file and field before anything is created."""
    import importlib.util

    from skyc.task import load_tasks

    if name is not None:
        check_service_name(name)
    overrides = {"resources": {"infra": infra}} if infra else None
    loaded = load_tasks(task_path, env=dict(envs), require_values=True, overrides=overrides)
    file = str(task_path)
    if len(loaded.tasks) != 1:
        raise UnsupportedFeature(f"{file}: a service runs one task; this file holds "
                                 f"{len(loaded.tasks)}", hint="put the service in a file "
                                 "of its own")
    task = loaded.tasks[0]
    config = service_config(task, file)
    check_local(task, file)
    _check_buckets(task)
    if importlib.util.find_spec("aiohttp") is None:
        raise UnsupportedFeature("services need the aiohttp package (their load balancer "
                                 "is built on it)", hint="pip install aiohttp")
    warnings = [w.render() for w in loaded.warnings if w.path != "service"]
    doc = task.dump()  # secret values null: the controller reads them from its environment
    kept = {k: v for k, v in (doc.pop("envs", None) or {}).items() if k not in envs}
    if kept:
        doc["envs"] = kept
    return Prepared(name, file, doc, dict(envs), config, warnings)


def _check_buckets(task: Task) -> None:
    """The task's buckets as apply checks them (each replica mounts them): refused here,
    naming the field, before the service exists."""
    from skyc.apply.bucket_jobs import has_buckets

    if not has_buckets(task):
        return
    from skyc.apply.buckets import check_buckets
    from skyc.settings.config import load_config
    from skyc.state.database import StateDB

    with StateDB() as db:
        check_buckets(task, "local", load_config(), db)


def up(prepared: Prepared) -> Service:
    """Record the service and start its controller; the service as recorded."""
    import yaml

    with ServeStore() as store:
        taken = [s.name for s in store.services()]
        name = prepared.name or new_service_name(taken)
        where = service_dir(name)
        service = Service(
            name=name, status="CONTROLLER_INIT", created_at=time.time(),
            port=free_port(ENDPOINT_PORTS, {s.port for s in store.services()}),
            task_file=str(where / TASK_COPY), cwd=os.getcwd(), envs=prepared.envs,
            config=prepared.config.dump(), target=prepared.config.scaling.min_replicas)
        store.add_service(service)
    try:
        where.mkdir(parents=True, exist_ok=True)
        (where / TASK_COPY).write_text(yaml.safe_dump(prepared.task_doc, sort_keys=True))
        from skyc.serve.starter import start

        start(name, service.port)
    except BaseException:
        # Whatever the controller did before it failed (or was given up on) is undone.
        with contextlib.suppress(SkycError):
            down(name, lambda _: None)
        raise
    return service


def update(name: str, prepared: Prepared, mode: str) -> int:
    """Record the service's next version (the task as loaded, its config, ``mode``:
    how the replicas move to it) for its controller, starting the controller when
    none runs; the version. Refused, with nothing changed, when the service is being
    taken down or the update would turn its endpoint's HTTPS on or off."""
    import yaml

    if mode not in MODES:
        raise ConfigError(f"--mode {mode}: expected one of {', '.join(MODES)}")
    with ServeStore() as store:
        service = require(store, name)
        if service.down_requested:
            raise ConfigError(f"service {name} is being taken down",
                              hint=f"start it again with `skyc serve up -n {name}`")
        if (ServiceConfig.load(service.config).tls is None) != (prepared.config.tls is None):
            raise UnsupportedFeature(
                f"{prepared.file}: service.tls: an update cannot turn HTTPS on or off "
                f"(the endpoint {endpoint_of_service(service)} keeps its scheme)",
                hint=f"take the service down and up again (`skyc serve down {name}`)")
        where = service_dir(name)

        def record(version: int) -> dict[str, Any]:
            path = where / TASK_VERSION.format(version=version)
            path.write_text(yaml.safe_dump(prepared.task_doc, sort_keys=True))
            return {"task_file": str(path), "cwd": os.getcwd(), "envs": prepared.envs,
                    "config": prepared.config.dump(), "update_mode": mode, "failure": None}

        version = store.new_version(name, record)
    if controller_pid(name) is None:
        from skyc.serve.starter import start

        start(name, service.port)
    return version


def endpoint_of_service(service: Service) -> str:
    return endpoint(service.port, ServiceConfig.load(service.config).tls is not None)


def require(store: ServeStore, name: str) -> Service:
    service = store.service(check_service_name(name))
    if service is None:
        known = ", ".join(s.name for s in store.services()) or "none"
        raise ConfigError(f"no service named {name!r} (services: {known})",
                          hint="see the services with `skyc serve status`")
    return service


def down_targets(names: list[str], every: bool) -> list[str]:
    if bool(names) == every:
        raise ConfigError("give service names or --all (not both)",
                          hint="see the services with `skyc serve status`")
    if not db_path().exists():
        if every:
            return []
        raise ConfigError(f"no service named {names[0]!r} (services: none)",
                          hint="see the services with `skyc serve status`")
    with ServeStore() as store:
        return [s.name for s in store.services()] if every else [
            require(store, n).name for n in names]


def down(name: str, progress: Progress) -> None:
    """Take the service down: every replica's cluster destroyed, the controller gone,
    the service forgotten. Raises when something is left, saying what."""
    with ServeStore() as store:
        store.update_service(name, down_requested=True, status="SHUTTING_DOWN")
    pid = controller_pid(name)
    if pid is not None:
        progress(f"{name}: the controller (pid {pid}) is taking the replicas down")
        _wait_for_controller(name, pid)
    with ServeStore() as store:
        left = store.replicas(name) if store.service(name) is not None else []
        for r in left:  # no controller did it (it was not running, or it failed)
            _tear_here(store, r, progress)
        store.remove_service(name)
    shutil.rmtree(service_dir(name), ignore_errors=True)


def _wait_for_controller(name: str, pid: int) -> None:
    deadline = time.monotonic() + knobs.down_timeout_s()
    while controller_pid(name) is not None:
        if time.monotonic() > deadline:
            raise SkycError(f"the controller of service {name} (pid {pid}) has not taken it "
                            f"down within {knobs.down_timeout_s():g} s",
                            hint=f"see `skyc serve logs {name} --controller`, then run "
                            f"`skyc serve down {name}` again")
        time.sleep(0.1)


def _tear_here(store: ServeStore, r: Replica, progress: Progress) -> None:
    from skyc.serve import replicas

    if not replicas.cluster_left(r.cluster):
        return
    progress(f"{r.service}: tearing down replica {r.id} (cluster {r.cluster})")
    r.status, r.why = "SHUTTING_DOWN", "the service is taken down"
    store.put_replica(r)
    replicas.teardown(r.service, r.id, r.cluster)


def endpoint_of(name: str) -> str:
    with ServeStore() as store:
        return endpoint_of_service(require(store, name))
