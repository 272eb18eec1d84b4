"""What the runtime runs (JobSpec) and what it reports back (JobResult)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationInfo, field_validator

from skyc.errors import JobFailed, UnsupportedFeature

MAX_ENV_ENTRY = 131072      # bytes of one NAME=value string (Linux MAX_ARG_STRLEN)
MAX_ENV_TOTAL = 1 << 20     # bytes of all of a job's own variables (ARG_MAX is 2 MiB)
_BUCKET_SCHEMES = ("s3://", "gs://", "gcs://", "r2://", "cos://", "oci://", "az://", "https://")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BucketMount(_Model):
    """A bucket (or a path in one) made available at ``target`` on every node.

    ``remote`` is in rclone's spelling, ``<remote name>:<bucket>/<path>``; the remote's
    settings (RCLONE_CONFIG_<NAME>_*) are in :attr:`JobSpec.bucket_env`. COPY copies it
    onto the node's disk before setup; MOUNT mounts it (writes go straight to the
    bucket); MOUNT_CACHED mounts it with a local write cache, and a job's run is not
    marked finished until that cache has reached the bucket.
    """

    target: str
    remote: str
    mode: Literal["MOUNT", "COPY", "MOUNT_CACHED"]


class JobSpec(_Model):
    """One job: the files it needs on every node and the commands it runs there."""

    name: str | None = None
    workdir: str | None = None                          # local directory, synced to ~/sky_workdir
    file_mounts: dict[str, str] = Field(default_factory=dict)  # node target -> local path
    setup: str | None = None
    run: str | None = None
    envs: dict[str, str] = Field(default_factory=dict)
    secrets: dict[str, SecretStr] = Field(default_factory=dict)
    num_gpus_per_node: float = 0
    num_nodes: int | None = None                        # None: every node of the cluster
    buckets: list[BucketMount] = Field(default_factory=list)
    # The mount tool's settings (RCLONE_CONFIG_*, credentials among them): given to the
    # mount and copy commands' environment only, never written to the node's disk.
    bucket_env: dict[str, SecretStr] = Field(default_factory=dict)

    @field_validator("envs", "secrets")
    @classmethod
    def _fits_an_environment(cls, values: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        total = 0
        for key, value in values.items():
            text = value.get_secret_value() if isinstance(value, SecretStr) else str(value)
            size = len(key.encode()) + 1 + len(text.encode())
            total += size
            if size >= MAX_ENV_ENTRY:
                raise UnsupportedFeature(
                    f"{info.field_name}.{key}: the value is {size // 1024} KiB; one "
                    f"environment variable may hold at most {MAX_ENV_ENTRY // 1024 - 1} KiB "
                    "(the kernel's MAX_ARG_STRLEN)",
                    hint="put the data in a file (file_mounts or workdir) and pass its path")
        if total > MAX_ENV_TOTAL:
            raise UnsupportedFeature(
                f"{info.field_name}: {total // 1024} KiB in all; a job's environment may "
                f"hold at most {MAX_ENV_TOTAL // 1024} KiB",
                hint="put the data in a file (file_mounts or workdir) and pass its path")
        return values

    @field_validator("file_mounts")
    @classmethod
    def _local_sources_only(cls, mounts: dict[str, str]) -> dict[str, str]:
        for target, source in mounts.items():
            if source.startswith(_BUCKET_SCHEMES) or "://" in source:
                raise UnsupportedFeature(
                    f"file_mounts.{target}: '{source}' is a bucket or URL; "
                    "only local files and directories can be mounted for now",
                    hint="copy the data inside the job's setup, or mount a local path",
                )
        return mounts

    def secret_values(self) -> dict[str, str]:
        return {k: v.get_secret_value() for k, v in self.secrets.items()}


class NodeResult(_Model):
    """How one node's part of the job ended."""

    node: str
    rank: int
    exit_code: int | None        # None: the node was lost before reporting
    error: str | None = None     # why the node failed, beyond its exit code


class JobResult(_Model):
    """A job's outcome on every node. ``failed_node`` names the node that failed first."""

    cluster: str
    job_id: int
    status: str  # SUCCEEDED | FAILED | FAILED_SETUP | CANCELLED | RUNNING (detached)
    nodes: list[NodeResult]
    failed_node: str | None = None
    log_dir: str

    @property
    def ok(self) -> bool:
        return self.status in ("SUCCEEDED", "RUNNING")

    @property
    def exit_code(self) -> int:
        """The job's exit code: the failing node's, 255 for a lost node, else 0."""
        if self.ok:
            return 0
        for n in self.nodes:
            if n.node == self.failed_node:
                return n.exit_code if n.exit_code not in (None, 0) else 255
        return 1

    def describe_failure(self) -> str:
        if self.status == "CANCELLED":
            return f"job {self.job_id} on cluster {self.cluster} was cancelled"
        for n in self.nodes:
            if n.node == self.failed_node:
                phase = "setup" if self.status == "FAILED_SETUP" else "run"
                why = n.error or f"{phase} exited with code {n.exit_code}"
                return (f"job {self.job_id} on cluster {self.cluster} failed: node {n.node} "
                        f"(rank={n.rank}): {why}")
        return f"job {self.job_id} on cluster {self.cluster}: {self.status}"

    def raise_for_status(self) -> None:
        """Raise JobFailed (carrying the job's exit code) when the job failed."""
        if not self.ok:
            raise JobFailed(self.describe_failure(), self.exit_code,
                            hint=f"full logs: {self.log_dir}")


def job_spec_from_task(task: Any, buckets: list[BucketMount] | None = None,
                       bucket_env: dict[str, str] | None = None) -> JobSpec:
    """Adapt a ``skyc.task.Task`` to a JobSpec (duck-typed: the task model is not imported).

    The GPUs per node come from the cluster (``ClusterInfo.num_gpus_per_node``).
    ``buckets`` (and the mount tool's settings, ``bucket_env``): the task's buckets as
    apply prepared them; None from a command that does not prepare buckets, which then
    refuses a task that mounts one.
    """
    from skyc.task.buckets import local_source

    workdir = getattr(task, "workdir", None)
    if workdir is not None and not isinstance(workdir, str):
        raise UnsupportedFeature(
            "workdir: a git repository workdir ({url, ref}) is not supported yet",
            hint="clone the repository locally and set workdir to its path",
        )
    file_mounts: dict[str, str] = {}
    for target, source in dict(getattr(task, "file_mounts", None) or {}).items():
        local = local_source(source)
        if local is None:
            if buckets is None:
                raise UnsupportedFeature(
                    f"file_mounts.{target}: buckets are set up by `skyc apply`; this "
                    "command cannot mount them yet",
                    hint="run the task with `skyc apply`")
            continue
        file_mounts[str(target)] = local
    envs = task.env_values() if hasattr(task, "env_values") else dict(task.envs or {})
    secrets = (task.secret_values() if hasattr(task, "secret_values")
               else dict(task.secrets or {}))
    return JobSpec(
        name=getattr(task, "name", None),
        num_nodes=getattr(task, "num_nodes", None),
        workdir=workdir,
        file_mounts=file_mounts,
        buckets=list(buckets or []),
        bucket_env={k: SecretStr(v) for k, v in (bucket_env or {}).items()},
        setup=getattr(task, "setup", None),
        run=getattr(task, "run", None),
        envs={str(k): str(v) for k, v in envs.items() if v is not None},
        secrets={str(k): SecretStr(str(v)) for k, v in secrets.items() if v is not None},
    )
