"""A task document (SkyPilot task YAML) and a pipeline's header document.

Secrets are held as ``SecretStr``: ``repr``/``str`` of a task show ``'**********'``
and :meth:`Task.dump` writes every secret as ``null``, so a dumped task can be
shared and loads again (its secret values are then given with ``--secret``).
The only way to read a secret value is :meth:`Task.secret_values`, for the
nodes' process environment.
"""

from __future__ import annotations

import posixpath
import re
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    SecretStr,
    StrictBool,
    StrictInt,
    StringConstraints,
    Tag,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from skyc.task.metadata import Duration, TaskMetadata
from skyc.task.resources import (
    NULLABLE_SCALAR_SCHEMA,
    FreeForm,
    Resources,
    enum_schema,
    plain_data,
    scalar_to_str,
)
from skyc.task.serving import PoolSpec, ServiceSpec

if TYPE_CHECKING:
    from skyc.task.candidate import ResourceCandidate

ENV_NAME_PATTERN = r"^[a-zA-Z_][a-zA-Z0-9_]*$"
BUCKET_SCHEMES = ("s3://", "gs://", "r2://", "cos://", "oci://", "nebius://")
_AZURE_BLOB_RE = re.compile(r"^https://[a-z0-9]+\.blob\.core\.windows\.net/", re.IGNORECASE)


class _Model(BaseModel):
    # defer_build: a model's validator is built on first use, not at import (start-up time).
    model_config = ConfigDict(extra="forbid", defer_build=True)


def is_bucket_uri(source: str) -> bool:
    """s3://, gs://, r2://, ... or an Azure blob URL (not a local path)."""
    return source.startswith(BUCKET_SCHEMES) or bool(_AZURE_BLOB_RE.match(source))


def _upper(v: Any) -> Any:
    return v.upper() if isinstance(v, str) else v


def _lower(v: Any) -> Any:
    return v.lower() if isinstance(v, str) else v


class StorageMount(_Model):
    """A storage dict in ``file_mounts``: a bucket, created or reused."""

    name: str | None = None
    source: Annotated[
        list[str] | None,
        BeforeValidator(lambda v: [v] if isinstance(v, str) else v),
        WithJsonSchema({"anyOf": [{"type": "string"},
                                  {"type": "array", "items": {"type": "string"}}]}),
    ] = None
    store: Annotated[
        Literal["s3", "gcs", "azure", "r2", "ibm", "oci", "nebius"],
        BeforeValidator(_lower),
        enum_schema("s3", "gcs", "azure", "r2", "ibm", "oci", "nebius"),
    ] | None = None
    persistent: StrictBool = True
    mode: Annotated[
        Literal["MOUNT", "COPY", "MOUNT_CACHED"],
        BeforeValidator(_upper),
        enum_schema("MOUNT", "COPY", "MOUNT_CACHED"),
    ] = "MOUNT"

    @field_validator("source")
    @classmethod
    def _source_not_empty(cls, v: list[str] | None) -> list[str] | None:
        if v is not None and (not v or "" in v):
            raise ValueError("source must not be empty")
        return v

    @model_validator(mode="after")
    def _name_or_source(self) -> StorageMount:
        if self.name is None and self.source is None:
            raise ValueError("a storage mount needs a 'name', a 'source', or both")
        return self


class GitWorkdir(_Model):
    """``workdir: {url, ref}``: a git repository checked out on the nodes."""

    url: Annotated[str, StringConstraints(min_length=1)]
    ref: str | None = None


def _volume(v: Any) -> Any:
    if (isinstance(v, str) and v) or (isinstance(v, dict) and v):
        return plain_data(v)
    raise ValueError(f"a volume is a volume name or a mapping, got {v!r}")


def _termination_delay(v: Any) -> Any:
    ok = (str, int)
    if v is None or (isinstance(v, ok) and not isinstance(v, bool)):
        return v
    if isinstance(v, dict) and all(
        isinstance(k, str) and isinstance(d, ok) and not isinstance(d, bool) for k, d in v.items()
    ):
        return v
    raise ValueError(f"termination_delay is a duration like '30s' or {{task: duration}}, got {v!r}")


def _mount_target(target: str) -> str:
    if not (target.startswith("/") or target.startswith("~")):
        raise ValueError(f"mount target {target!r} must be an absolute path or start with ~")
    return target


WORKDIR_ON_NODES = "~/sky_workdir"


def _leaves_home(target: str) -> bool:
    """Whether ``~`` or ``~/...`` climbs out of the home directory through ``..``."""
    if target != "~" and not target.startswith("~/"):
        return False
    rest = posixpath.normpath("./" + target[2:])
    return rest == ".." or rest.startswith("../")


def _file_mount_target(target: str) -> str:
    """As SkyPilot: a relative target (``./data``, ``data``) lies under ~/sky_workdir/.
    A target under ``~`` must stay there."""
    if _leaves_home(target):
        raise ValueError(f"mount target {target!r} leaves the home directory (~) through "
                         "'..'; give an absolute path, or a path under ~ without '..'")
    if target.startswith("/") or target.startswith("~"):
        return target
    rel = posixpath.normpath(target)
    if rel == ".." or rel.startswith("../") or not target.strip():
        raise ValueError(f"mount target {target!r} leaves {WORKDIR_ON_NODES}; give an "
                         "absolute path, a path under ~, or one relative to the workdir")
    return WORKDIR_ON_NODES if rel == "." else f"{WORKDIR_ON_NODES}/{rel}"


MountTarget = Annotated[str, AfterValidator(_mount_target)]
FileMountTarget = Annotated[str, AfterValidator(_file_mount_target)]
VolumeSource = Annotated[Any, BeforeValidator(_volume)]


def _mount_kind(v: Any) -> str:
    return "#storage" if isinstance(v, (dict, BaseModel)) else "#path"


MountSource = Annotated[
    Annotated[Annotated[str, StringConstraints(min_length=1)], Tag("#path")]
    | Annotated[StorageMount, Tag("#storage")],
    Discriminator(_mount_kind),
]
Workdir = Annotated[
    Annotated[Annotated[str, StringConstraints(min_length=1)], Tag("#path")]
    | Annotated[GitWorkdir, Tag("#storage")],
    Discriminator(_mount_kind),
]
EnvName = Annotated[str, StringConstraints(pattern=ENV_NAME_PATTERN)]
EnvValue = Annotated[str | None, BeforeValidator(scalar_to_str), NULLABLE_SCALAR_SCHEMA]
SecretValue = Annotated[
    SecretStr | None, BeforeValidator(scalar_to_str), NULLABLE_SCALAR_SCHEMA
]
SizeGB = Annotated[float, Field(ge=0, le=1e9, allow_inf_nan=False)]
# The most nodes any task may ask for; each target declares its own, lower, limit
# (``Capabilities.max_nodes``), checked when the task is planned and applied.
MAX_NUM_NODES = 10_000


class Task(_Model):
    """One task document."""

    name: str | None = None
    workdir: Workdir | None = None
    num_nodes: Annotated[StrictInt, Field(gt=0, le=MAX_NUM_NODES)] = 1
    # No ``resources:`` is an empty Resources, which has nothing to validate: made
    # without building Resources' own validator at a run's start.
    resources: Resources = Field(default_factory=Resources.model_construct)
    envs: dict[EnvName, EnvValue] = Field(default_factory=dict)
    secrets: dict[EnvName, SecretValue] = Field(default_factory=dict)
    file_mounts: dict[FileMountTarget, MountSource] = Field(default_factory=dict)
    volumes: dict[MountTarget, VolumeSource] = Field(default_factory=dict)
    setup: str | None = None
    run: str | None = None
    config: FreeForm | None = None
    inputs: dict[str, SizeGB] | None = None
    outputs: dict[str, SizeGB] | None = None
    service: ServiceSpec | None = Field(
        default=None, description="validated as SkyPilot does; skyc serves no models yet"
    )
    pool: PoolSpec | None = Field(
        default=None, description="validated as SkyPilot does; refused at apply for now"
    )
    metadata: TaskMetadata | None = Field(
        default=None, alias="_metadata",
        description="free-form, as in SkyPilot; skyc reads _metadata.skyc (duration)"
    )

    @field_validator("volumes")
    @classmethod
    def _volumes_as_written(cls, volumes: dict[str, Any]) -> dict[str, Any]:
        from skyc.task.volumes import volume_claims

        volume_claims(volumes)  # a name, or {size, labels, config}; ValueError otherwise
        return volumes

    @property
    def duration(self) -> Duration | None:
        """``_metadata.skyc.duration``: how long the task runs (None when not given)."""
        skyc = self.metadata.skyc if self.metadata is not None else None
        return skyc.duration if skyc is not None else None

    @property
    def outputs_size_gb(self) -> float:
        """Estimated size of the task's outputs (egress to the next pipeline task)."""
        return float(sum((self.outputs or {}).values()))

    @property
    def inputs_size_gb(self) -> float:
        return float(sum((self.inputs or {}).values()))

    def secret_values(self) -> dict[str, str]:
        """Secret values for the nodes' process environment (secrets without a value
        are left out)."""
        return {k: v.get_secret_value() for k, v in self.secrets.items() if v is not None}

    def env_values(self) -> dict[str, str]:
        """``envs`` with a value, for the nodes' process environment."""
        return {k: v for k, v in self.envs.items() if v is not None}

    def candidates(self) -> list[ResourceCandidate]:
        """Each alternative of ``resources``, with the buckets the task's nodes reach."""
        from skyc.task.buckets import bucket_grants
        from skyc.task.expand import expand_resources

        found = expand_resources(self.resources)
        extra: dict[str, Any] = {}
        if self.file_mounts:
            extra["buckets"] = bucket_grants(self.file_mounts)
        if self.volumes:
            from skyc.task.volumes import volume_claims

            extra["volumes"] = volume_claims(self.volumes)
        return [c.model_copy(update=extra) for c in found] if extra else found

    def dump(self) -> dict[str, Any]:
        """The normalized task as plain data (YAML/JSON-ready). Secret values are
        written as ``null``; everything else loads back to an equal task."""
        data = self.model_dump(mode="json", exclude_none=True, by_alias=True)
        if self.secrets:
            data["secrets"] = {k: None for k in self.secrets}
        for key in ("envs", "secrets", "file_mounts", "volumes"):
            if not data.get(key):
                data.pop(key, None)
        if self.envs:
            data["envs"] = dict(self.envs)
        if not data.get("resources"):
            data.pop("resources", None)
        return data


class JobGroupHeader(_Model):
    """The optional first document of a multi-document file."""

    name: str | None = None
    execution: Annotated[
        Literal["serial", "parallel"], BeforeValidator(_lower), enum_schema("serial", "parallel")
    ] = "serial"
    primary_tasks: list[str] | None = None
    termination_delay: Annotated[Any, BeforeValidator(_termination_delay)] = None

    def dump(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


HEADER_KEYS = frozenset(JobGroupHeader.model_fields)
