"""``skyc jobs ...`` forwarded to the controller cluster (config ``jobs.controller``).

Each command runs ``skyc jobs <cmd>`` on the controller's head node, over the same
transport the node agent uses (SSH, or a local process), with the controller's own
SKYC_HOME there (skyc.jobs.controller_cluster). A launch ships the task file there
first, with the workdir and file_mounts it names and its secret values taken out
(skyc.jobs.shipping); the values (secrets, and every --env) travel on the command's
stdin as JSON and are never written on either side.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skyc.errors import (
    ConfigError,
    ControllerUnreachable,
    SkycError,
    TransportError,
    UnsupportedFeature,
)
from skyc.jobs.controller_cluster import (
    NOT_INSTALLED,
    ROOT,
    bring_up,
    controller_cluster_name,
    controller_config,
    head_transport,
    install,
    python_for,
    recorded_info,
    run_sync,
    skyc_command,
)
from skyc.model.owner import OWNER_PATTERN

if TYPE_CHECKING:
    from skyc.apply.launch import LaunchReporter
    from skyc.model.nodes import ClusterInfo
    from skyc.runtime.transport import CommandResult, Transport
    from skyc.settings.config import JobsControllerConfig, SkycConfig
    from skyc.task import Task


def configured(config: SkycConfig | None = None) -> RemoteController | None:
    """The controller cluster the config names; None: controllers run on this machine."""
    from skyc.settings.config import load_config

    settings = (config or load_config()).jobs.controller
    return None if settings is None else RemoteController(settings)


def read_values(text: str) -> dict[str, dict[str, str]]:
    """A forwarded launch's stdin: ``{"envs": {NAME: value}, "secrets": {NAME: value},
    "owner": WHO}`` (``owner``: who submitted it, given back as ``{"owner": {"name":
    WHO}}``; empty when not given)."""
    try:
        doc = json.loads(text or "{}")
        parts = {key: doc.get(key) or {} for key in ("envs", "secrets")}
        if not all(isinstance(v, dict) for v in parts.values()):
            raise ValueError
        who = doc.get("owner")
        if who is not None and not (isinstance(who, str) and OWNER_PATTERN.match(who)):
            raise ValueError
    except (ValueError, AttributeError):
        raise ConfigError("--values-stdin: expected JSON {\"envs\": {...}, \"secrets\": "
                          "{...}, \"owner\": \"user@host\"} on stdin") from None
    values = {key: {str(k): str(v) for k, v in part.items()} for key, part in parts.items()}
    values["owner"] = {"name": who} if who else {}
    return values


@dataclass
class RemoteController:
    settings: JobsControllerConfig

    @property
    def name(self) -> str:
        return controller_cluster_name()

    def _unreachable(self, detail: str) -> ControllerUnreachable:
        return ControllerUnreachable(
            f"the jobs controller cluster {self.name} is not reachable: {detail}",
            hint=f"see it with `skyc status {self.name}`; bring it back with "
            "`skyc jobs controller-up` (it re-applies the controller's stack and "
            "reinstalls skyc there; the jobs' state lives on its disk)")

    def info(self) -> ClusterInfo:
        info = recorded_info(self.name)
        if info is None:
            raise self._unreachable("it is not up")
        return info

    def up(self, reporter: LaunchReporter, *, reapply: bool = False) -> ClusterInfo:
        try:
            return bring_up(self.settings, reporter, reapply=reapply)
        except TransportError as exc:
            raise self._unreachable(exc.message) from None

    @contextlib.asynccontextmanager
    async def _connected(self, info: ClusterInfo) -> AsyncIterator[Transport]:
        """The head node's transport, connected (else the controller is unreachable),
        closed afterwards."""
        transport = head_transport(info)
        try:
            try:
                await transport.connect(10)
            except TransportError as exc:
                raise self._unreachable(exc.message) from None
            yield transport
        finally:
            await transport.close()

    def run(self, args: Sequence[str], *, stdin: bytes | None = None,
            on_stdout: Callable[[bytes], None] | None = None,
            info: ClusterInfo | None = None) -> CommandResult:
        """``skyc ARGS`` on the controller; its exit code, stdout (unless streamed) and
        stderr."""
        info = info or self.info()
        return run_sync(self._run(info, list(args), stdin, on_stdout))

    async def _run(self, info: ClusterInfo, args: list[str], stdin: bytes | None,
                   on_stdout: Callable[[bytes], None] | None) -> CommandResult:
        async with self._connected(info) as transport:
            python = python_for(transport.node)
            command = skyc_command(python, args, os.environ)
            try:
                res = await transport.run(command, stdin=stdin, on_stdout=on_stdout)
                if res.exit_code == NOT_INSTALLED:  # another skyc version here: ship it
                    await install(transport, python)
                    res = await transport.run(command, stdin=stdin, on_stdout=on_stdout)
            except TransportError as exc:
                raise self._unreachable(exc.message) from None
        if res.exit_code in (126, 127):
            raise self._unreachable("skyc does not run there (exit "
                                    f"{res.exit_code}): {_tail(res.stderr)}")
        return res

    def _checked(self, args: Sequence[str], **kw: Any) -> CommandResult:
        res = self.run(args, **kw)
        if res.exit_code != 0:
            raise SkycError(f"jobs controller cluster {self.name}: `skyc "
                            f"{' '.join(args[:2])}` failed: {_tail(res.stderr)}")
        return res

    # -- the commands ------------------------------------------------------------

    def launch(self, task_path: Path, *, name: str | None, envs: Mapping[str, str],
               secrets: Mapping[str, str | None], reporter: LaunchReporter) -> int:
        """Submit the job to the controller cluster (brought up first); its id there."""
        from skyc.apply.preflight import check_task
        from skyc.settings.config import load_config
        from skyc.task import load_tasks

        loaded = load_tasks(task_path, env=dict(envs), secrets=dict(secrets),
                            require_values=True).tasks
        for task in loaded:
            check_task(task)   # a missing workdir is refused before anything is made
        config = load_config()
        info = self.up(reporter)
        self._refuse_without_credentials(loaded, config, info)
        remote_task = self._ship(info, task_path, loaded, config)
        values: dict[str, Any] = {"envs": dict(envs), "secrets": {}}
        for task in loaded:
            values["secrets"].update(task.secret_values())
        from skyc.state.database import caller

        values["owner"] = caller()  # the job is the submitter's, not the controller's user
        args = ["jobs", "launch", remote_task, "-y", "-d", "--values-stdin"]
        if name:
            args += ["--name", name]
        reporter.stage("jobs controller", f"submitting to cluster {self.name}")
        res = self._checked(args, stdin=json.dumps(values).encode(), info=info)
        try:
            return int(res.stdout.decode().strip().splitlines()[-1])
        except (ValueError, IndexError):
            raise SkycError(f"jobs controller cluster {self.name}: the launch answered no "
                            f"job id: {_tail(res.stdout + res.stderr)}") from None

    def _refuse_without_credentials(self, tasks: Sequence[Task], config: SkycConfig,
                                    info: ClusterInfo) -> None:
        """A job planned onto a cloud the controller's node has no credentials for (its
        ``skyc check`` says) is refused now, not when its controller applies."""
        from skyc.apply.infra import clouds
        from skyc.apply.launch import LaunchOptions, make_plan

        plan = make_plan(list(tasks), LaunchOptions(), config=config)
        # Only the clouds need credentials (local and SSH pools need none).
        wanted = {tp.placement.cloud: tp.placement.infra for tp in plan.tasks
                  if tp.placement.cloud in clouds()}
        if not wanted:
            return
        res = self._checked(["check", "--format", "json"], info=info)
        there = {str(e["name"]).split("/")[0]: e for e in json.loads(res.stdout)["infra"]}
        for cloud, infra in sorted(wanted.items()):
            entry = there.get(cloud)
            if entry is None or entry.get("credentials", entry.get("enabled")):
                continue
            detail = "; ".join(entry.get("details") or [entry.get("reason", "")])
            raise UnsupportedFeature(
                f"the job is placed on {infra}, but the jobs controller cluster "
                f"{self.name} cannot provision {cloud}: {detail}",
                hint=_credentials_hint(cloud, info.cloud))

    def _ship(self, info: ClusterInfo, task_path: Path, tasks: Sequence[Task],
              config: SkycConfig) -> str:
        """Write the controller's config and the job's bundle (skyc.jobs.shipping) on
        the controller; the task file's path there, relative to its work dir."""
        from skyc.jobs.shipping import bundle

        shipped = bundle(task_path, tasks)
        run_sync(self._upload(info, controller_config(config), shipped.data, shipped.digest))
        return shipped.task_file

    async def _upload(self, info: ClusterInfo, config: bytes, data: bytes,
                      digest: str) -> None:
        from skyc.runtime.transport import upload_bytes

        async with self._connected(info) as transport:
            await upload_bytes(transport, config, "~/.skyc-controller/home/config.yaml", 0o600)
            res = await transport.run(
                f'd="{ROOT}/tasks/{digest}"; mkdir -p "$d" && tar xzf - -C "$d"', stdin=data,
                timeout=600)
            if res.exit_code != 0:
                raise SkycError(f"jobs controller cluster {self.name}: cannot unpack the "
                                f"job's files: {_tail(res.stderr)}")

    def queue(self) -> list[dict[str, Any]]:
        """Every user's jobs on the controller, as ``skyc jobs queue --format json -u``
        lists them there (none while the controller cluster has never been up)."""
        if recorded_info(self.name) is None:
            from skyc.state.database import StateDB

            with StateDB() as db:
                if db.get_cluster(self.name) is None:
                    return []
        res = self._checked(["jobs", "queue", "--format", "json", "--all-users"])
        rows: list[dict[str, Any]] = json.loads(res.stdout)["jobs"]
        return rows

    def stream(self, args: Sequence[str], on_output: Callable[[bytes], None]) -> CommandResult:
        """``skyc ARGS`` there, its output streamed to ``on_output``."""
        return self.run(args, on_stdout=on_output)


def _credentials_hint(cloud: str, controller_cloud: str) -> str:
    """What to do about a job's cloud the controller has no credentials for, from what
    each target gives a controller cluster's nodes (its ``controller_credentials``)."""
    from skyc.compiler import capabilities, target_names

    given = {t: str(c).replace("-", " ") for t in target_names()
             if (c := capabilities(t).controller_credentials)}
    other = ("place the job on infra the controller can reach (resources.infra), or "
             "remove jobs.controller from the config to run the controller here")
    if cloud == controller_cloud and cloud in given:
        return (f"a controller cluster on {cloud} gets credentials for it from its "
                f"{given[cloud]}; one made before skyc attached it has none: `skyc jobs "
                f"controller-up` applies its stack again; or {other}")
    where = ", ".join(f"{t} (an {how})" for t, how in sorted(given.items()))
    return (f"skyc gives a controller cluster's nodes credentials for their own cloud "
            f"only, on {where or 'no target yet'}: put the controller there "
            f"(jobs.controller.infra) for jobs on it, give the controller's node "
            f"credentials for {cloud} (see 'Controller cluster' in the README), or {other}")


def _tail(data: bytes) -> str:
    return data.decode(errors="replace").strip()[-1500:] or "(no output)"


def check_destroy(names: Sequence[str], *, purge: bool = False) -> None:
    """Refuse to destroy the controller cluster while it supervises unfinished jobs
    (their clusters would be left running with nobody to end them), or while it does
    not answer, unless ``purge``: then its jobs' state is lost with it."""
    from skyc.model.managed_jobs import TERMINAL
    from skyc.settings.config import JobsControllerConfig, load_config

    name = controller_cluster_name()
    if name not in names or purge:
        return
    settings = load_config().jobs.controller or JobsControllerConfig(infra="local")
    try:
        jobs = RemoteController(settings).queue()
    except ControllerUnreachable as exc:
        raise SkycError(
            f"destroy: {name} is the managed-jobs controller and does not answer, so "
            f"whether it still supervises jobs is unknown ({exc.message})",
            hint="bring it back with `skyc jobs controller-up` and cancel its jobs, or "
            "pass --purge to destroy it anyway (its jobs' state and any job cluster it "
            "made are left to you: see `skyc status`)") from None
    unfinished = [j for j in jobs if j.get("status") not in TERMINAL]
    if unfinished:
        listed = ", ".join(f"{j.get('id')} ({j.get('status')})" for j in unfinished[:10])
        raise SkycError(
            f"destroy: {name} is the managed-jobs controller and still supervises "
            f"{len(unfinished)} unfinished job(s): {listed}",
            hint="cancel them first with `skyc jobs cancel --all` (their clusters are "
            "torn down), or wait for them to end; --purge destroys it anyway")
