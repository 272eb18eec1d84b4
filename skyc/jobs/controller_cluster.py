"""The managed-jobs controller on a cluster of its own (config ``jobs.controller``).

The controller cluster is a regular cluster, ``skyc-jobs-controller-<user hash>``:
planned, compiled and applied like any other (its stack is in its workspace and every
resource carries the label ``skyc-role: jobs-controller``; ``skyc status`` lists it).
Where its target gives a controller's nodes credentials (the target record's
``controller_credentials``: on AWS an IAM role and instance profile in the stack), the
controller can provision job clusters there. On its head node skyc ships itself and
keeps a home of its own::

    ~/.skyc-controller/pkg-<version>/skyc   this skyc package, copied as it is
    ~/.skyc-controller/home/                the controller's SKYC_HOME (config, state)
    ~/.skyc-controller/tasks/<hash>/        the task files of the jobs submitted there
    ~/.skyc-controller/work/                where the controller's commands run

The node needs Python 3.10+; skyc's dependencies are used when they import there,
and installed with ``pip install --user`` (network to PyPI) when they do not.
"""

from __future__ import annotations

import getpass
import gzip
import hashlib
import io
import shlex
import socket
import tarfile
from collections.abc import Coroutine, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from skyc.errors import ConfigError, InfeasibleError, SkycError

if TYPE_CHECKING:
    from skyc.apply.launch import LaunchReporter
    from skyc.model.nodes import ClusterInfo, Node
    from skyc.runtime.transport import Transport
    from skyc.settings.config import JobsControllerConfig, SkycConfig
    from skyc.task import Task

T = TypeVar("T")
ROOT = "$HOME/.skyc-controller"
# Variables that tune the controller (never secrets): they travel with each command.
TUNING = ("SKYC_JOBS_POLL_S", "SKYC_JOBS_LEASE_S", "SKYC_JOBS_IDLE_S")
# The modules of skyc's dependencies (pyproject's ``dependencies``).
_DEPENDENCY_MODULES = ("pydantic", "yaml", "typer", "rich", "jinja2", "pulp", "asyncssh",
                       "pathspec")
_PY_TOO_OLD = 3
NOT_INSTALLED = 219  # a command's exit status when this skyc's version is not there


def controller_cluster_name() -> str:
    """The controller cluster of this user on this machine."""
    who = f"{getpass.getuser()}@{socket.gethostname()}"
    return f"skyc-jobs-controller-{hashlib.sha256(who.encode()).hexdigest()[:8]}"


def controller_task(settings: JobsControllerConfig) -> Task:
    """The controller cluster as a task: ``jobs.controller``'s infra and resources, and
    the label that tells the compiler it is the controller's (its nodes then get the
    credentials their target's ``controller_credentials`` names)."""
    from pydantic import ValidationError

    from skyc.compiler.base import CONTROLLER_ROLE, ROLE_LABEL
    from skyc.settings.config import config_path
    from skyc.task import Task

    resources = dict(settings.resources)
    if "infra" in resources:
        raise ConfigError(f"{config_path()}: jobs.controller.resources.infra: give the "
                          "controller's infra as jobs.controller.infra")
    resources["infra"] = settings.infra
    resources["labels"] = {**dict(resources.get("labels") or {}), ROLE_LABEL: CONTROLLER_ROLE}
    try:
        return Task.model_validate({"name": "skyc-jobs-controller", "resources": resources})
    except ValidationError as exc:
        problems = "; ".join(
            f"jobs.controller.{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
            for e in exc.errors())
        raise ConfigError(f"{config_path()}: {problems}",
                          hint="jobs.controller.resources takes a task's resources keys "
                          "(cpus, memory, instance_type, ...)") from None


def recorded_info(name: str) -> ClusterInfo | None:
    """The cluster's nodes as its last apply recorded them; None when it is not up."""
    from skyc.model.workspace import recorded_cluster
    from skyc.state.database import StateDB

    with StateDB() as db:
        record = db.get_cluster(name)
    if record is None or record.status != "UP":
        return None
    return recorded_cluster(name)


def bring_up(settings: JobsControllerConfig, reporter: LaunchReporter, *,
             reapply: bool = False) -> ClusterInfo:
    """The controller cluster, applied when it is not up (or with ``reapply``), with
    skyc installed on its head node."""
    from skyc.apply.launch import LaunchOptions, provision_cluster
    from skyc.state.database import StateDB

    name = controller_cluster_name()
    info = None if reapply else recorded_info(name)
    if info is None:
        reporter.stage("jobs controller", f"cluster {name} on {settings.infra}: it runs "
                       "the managed-jobs controller")
        try:
            info, _, _ = provision_cluster(controller_task(settings), name,
                                           LaunchOptions(cluster=name), reporter)
        except InfeasibleError as exc:
            from skyc.settings.config import config_path

            raise InfeasibleError(f"{config_path()}: jobs.controller: {exc.message}",
                                  hint=exc.hint) from None
        with StateDB() as db:
            db.add_event(name, "jobs-controller", "the managed-jobs controller cluster")
    from skyc.runtime import wait_for_boot

    # A node just created boots for minutes: wait for it (provision.boot_timeout).
    wait_for_boot(info, on_wait=lambda text: reporter.stage("boot", text))
    reporter.stage("jobs controller", f"installing skyc on cluster {name}")
    run_sync(_install_once(head_transport(info), python_for(head(info))))
    return info


async def _install_once(transport: Transport, python: str) -> None:
    try:
        await transport.connect(60)
        await install(transport, python)
    finally:
        await transport.close()


def head(info: ClusterInfo) -> Node:
    return min(info.nodes, key=lambda n: n.rank)


def python_for(node: Node) -> str:
    from skyc.runtime.remote import local_python

    return local_python() if node.transport == "local" else "python3"


def head_transport(info: ClusterInfo, connect_timeout: float = 10.0) -> Transport:
    from skyc.runtime.session import make_transport

    return make_transport(head(info), Path(info.workspace), connect_timeout)


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    import asyncio

    return asyncio.run(coro)


@lru_cache(maxsize=1)
def package_archive() -> tuple[bytes, str]:
    """This skyc package as a tar.gz (byte-identical for the same files), and its version."""
    import skyc

    root = Path(skyc.__file__).parent
    files = sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                   and p.suffix != ".pyc")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for path in files:
            data = path.read_bytes()
            member = tarfile.TarInfo(str(Path("skyc") / path.relative_to(root)))
            member.size, member.mode, member.mtime = len(data), 0o644, 0
            tar.addfile(member, io.BytesIO(data))
    data = gzip.compress(buf.getvalue(), compresslevel=6, mtime=0)
    return data, hashlib.sha256(data).hexdigest()[:16]


def requirements() -> list[str]:
    """skyc's own dependencies (no extras), as pip takes them."""
    from importlib import metadata

    try:
        reqs = metadata.requires("skyc") or []
    except metadata.PackageNotFoundError:
        return list(_DEPENDENCY_MODULES)
    return [r.split(";")[0].strip() for r in reqs if "extra ==" not in r]


def skyc_command(python: str, args: Sequence[str], env: Mapping[str, str]) -> str:
    """The shell command that runs ``skyc ARGS`` on the controller's head node."""
    _, version = package_archive()
    tuning = "".join(f"{k}={shlex.quote(v)} " for k, v in sorted(env.items()) if k in TUNING)
    return (f'r="{ROOT}"; [ -f "$r/pkg-{version}/.complete" ] || exit {NOT_INSTALLED}; '
            f'mkdir -p "$r/work" && cd "$r/work" && SKYC_HOME="$r/home" '
            f'PYTHONPATH="$r/pkg-{version}" PYDANTIC_DISABLE_PLUGINS=1 NO_COLOR=1 '
            f'COLUMNS=200 {tuning}exec {python} -m skyc '
            + " ".join(shlex.quote(a) for a in args))


async def install(transport: Transport, python: str) -> None:
    """Ship this skyc to the (connected) node unless that version is there; make sure
    it imports."""
    archive, version = package_archive()
    node = transport.node.name
    pkg = f'"{ROOT}/pkg-{version}"'
    res = await transport.run(f'[ -f {pkg}/.complete ] && echo present; true', timeout=60)
    if b"present" in res.stdout:
        return
    res = await transport.run(
        f'{python} -c "import sys; sys.exit(0 if sys.version_info >= (3, 10) else '
        f'{_PY_TOO_OLD})"', timeout=60)
    if res.exit_code != 0:
        why = ("its Python is older than 3.10" if res.exit_code == _PY_TOO_OLD
               else f"`{python}` does not run there")
        raise SkycError(f"jobs controller node {node}: {why}",
                        hint="a controller node needs Python 3.10+ (python3 on its PATH)")
    res = await transport.run(
        f'd={pkg}; rm -rf "$d.tmp" && mkdir -p "$d.tmp" && tar xzf - -C "$d.tmp" '
        '&& rm -rf "$d" && mv "$d.tmp" "$d"', stdin=archive, timeout=300)
    if res.exit_code != 0:
        raise SkycError(f"jobs controller node {node}: cannot unpack skyc: "
                        f"{res.stderr.decode(errors='replace').strip()[-500:]}")
    check = (f'PYTHONPATH={pkg} {python} -c '
             + shlex.quote("import skyc.cli, " + ", ".join(_DEPENDENCY_MODULES)))
    res = await transport.run(check, timeout=120)
    if res.exit_code != 0:
        await _install_dependencies(transport, python, res.stderr)
        res = await transport.run(check, timeout=120)
        if res.exit_code != 0:
            raise SkycError(f"jobs controller node {node}: skyc does not import after "
                            "installing its dependencies: "
                            f"{res.stderr.decode(errors='replace').strip()[-500:]}")
    await transport.run(f'touch {pkg}/.complete', timeout=60)


async def _install_dependencies(transport: Transport, python: str, why: bytes) -> None:
    reqs = " ".join(shlex.quote(r) for r in requirements())
    res = await transport.run(f"{python} -m pip install --user --quiet {reqs}", timeout=900)
    if res.exit_code != 0:
        missing = why.decode(errors="replace").strip().splitlines()[-1:]
        raise SkycError(
            f"jobs controller node {transport.node.name}: skyc's dependencies are missing "
            f"({' '.join(missing)}) and `pip install --user` failed: "
            f"{res.stderr.decode(errors='replace').strip()[-500:]}",
            hint="a controller node needs Python 3.10+ with pip and network to PyPI, or "
            "skyc's dependencies installed already (e.g. in its machine image)")


def controller_config(config: SkycConfig) -> bytes:
    """The config the controller runs with: this one, less its ``jobs`` section (the
    controller runs its jobs' controllers where it is)."""
    import yaml

    doc = config.model_dump(mode="json", exclude={"jobs"}, exclude_defaults=True)
    return yaml.safe_dump(doc, sort_keys=True).encode()
