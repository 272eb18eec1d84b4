"""The ``resources`` section of a task, as SkyPilot writes it.

Short forms are parsed on load into normalized values (``A100:8`` and
``{A100: 8}`` give the same ``Accelerators``) and written back in one
canonical short form by ``model_dump``, so a dumped task loads to an equal one.
Unset fields are ``None``; defaults (``disk_size`` 256, on-demand) are applied
when the resources are expanded into candidates.
"""

from __future__ import annotations

import datetime
import math
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    StrictBool,
    StrictInt,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from skyc.task import _parse
from skyc.task.candidate import AcceleratorRequest, InfraSpec, Quantity


class _Model(BaseModel):
    # defer_build: a model's validator is built on first use, not at import (start-up time).
    model_config = ConfigDict(extra="forbid", defer_build=True)


class Accelerators(BaseModel):
    """Normalized ``accelerators``: one ask, a set (any of, same preference) or an
    ordered list (earlier preferred)."""

    # defer_build: a model's validator is built on first use, not at import (start-up time).
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    mode: Literal["single", "any", "ordered"]
    items: tuple[AcceleratorRequest, ...]


def _parse_accelerators(raw: Any) -> Any:
    if isinstance(raw, Accelerators):
        return raw
    if isinstance(raw, (str, int, float)) and not isinstance(raw, bool):
        return Accelerators(mode="single", items=(_parse.parse_accelerator(str(raw)),))
    if isinstance(raw, dict):
        if not raw:
            raise ValueError("accelerators mapping is empty")
        # A set has no order: keep its items sorted so equal sets compare (and dump) equal.
        items = tuple(sorted(
            (_parse.parse_accelerator(str(k), v) for k, v in raw.items()),
            key=_parse.accelerator_key,
        ))
        return Accelerators(mode="single" if len(items) == 1 else "any", items=items)
    if isinstance(raw, list):
        if not raw:
            raise ValueError("accelerators list is empty")
        out: list[AcceleratorRequest] = []
        for item in raw:
            if isinstance(item, dict) and len(item) == 1:
                ((k, v),) = item.items()
                out.append(_parse.parse_accelerator(str(k), v))
            elif isinstance(item, str):
                out.append(_parse.parse_accelerator(item))
            else:
                raise ValueError(f"invalid accelerator {item!r} in list: expected 'A100:8'")
        return Accelerators(mode="single" if len(out) == 1 else "ordered", items=tuple(out))
    raise ValueError(f"invalid accelerators {raw!r}: expected 'A100:8', a mapping or a list")


def _dump_accelerators(acc: Accelerators) -> Any:
    if acc.mode == "single":
        return _parse.fmt_accelerator(acc.items[0])
    if acc.mode == "ordered":
        return [_parse.fmt_accelerator(a) for a in acc.items]
    return {_parse.accelerator_key(a): _parse.fmt_number(a.count) for a in acc.items}


_ACC_SCHEMA: dict[str, Any] = {
    "description": "'A100:8', 'A100', 'A100:0.5', 'tpu-v4-8', '80GB+:1', {A100: 8}, "
    "a mapping of several (any of them), or a list (ordered preference)",
    "anyOf": [
        {"type": "string"},
        {"type": "object", "additionalProperties": {"type": ["number", "null"]}},
        {"type": "array", "items": {"type": ["string", "object"]}},
    ],
}

AcceleratorsField = Annotated[
    Accelerators,
    BeforeValidator(_parse_accelerators),
    PlainSerializer(_dump_accelerators),
    WithJsonSchema(_ACC_SCHEMA),
]
_QTY_SCHEMA: dict[str, Any] = {
    "anyOf": [{"type": "number"}, {"type": "string", "pattern": r"^\d+(\.\d+)?\+?$"}]
}
QuantityField = Annotated[
    Quantity,
    BeforeValidator(lambda v: v if isinstance(v, Quantity) else _parse.parse_quantity(v)),
    PlainSerializer(_parse.fmt_quantity),
    WithJsonSchema(_QTY_SCHEMA),
]
MemoryField = Annotated[
    Quantity,
    BeforeValidator(
        lambda v: v if isinstance(v, Quantity) else _parse.parse_quantity(v, unit=True)
    ),
    PlainSerializer(_parse.fmt_quantity),
    WithJsonSchema({"anyOf": [{"type": "number"}, {"type": "string"}]}),
]
InfraField = Annotated[
    InfraSpec,
    BeforeValidator(lambda v: v if isinstance(v, InfraSpec) else _parse.parse_infra(v)),
    PlainSerializer(_parse.fmt_infra),
    WithJsonSchema({
        "type": "string",
        "description": "cloud[/region[/zone]], */region, k8s[/context], ssh/<pool>, local",
    }),
]
def _ports_out(ports: tuple[str, ...]) -> list[str]:
    # A function of skyc's own, not the builtin ``list``: pydantic reads a serializer's
    # signature, and a builtin's is parsed from its text signature with the tokenize
    # module (its regexes compiled on first use, on every task's loading).
    return list(ports)


PortsField = Annotated[
    tuple[str, ...],
    BeforeValidator(_parse.parse_ports),
    PlainSerializer(_ports_out),
    WithJsonSchema({
        "anyOf": [
            {"type": "integer"},
            {"type": "string"},
            {"type": "array", "items": {"type": ["integer", "string"]}},
        ]
    }),
]
DiskSizeField = Annotated[
    int,
    BeforeValidator(_parse.parse_size_gb),
    WithJsonSchema({"anyOf": [{"type": "integer"}, {"type": "string"}]}),
]


def _lower(v: Any) -> Any:
    return v.lower() if isinstance(v, str) else v


def _upper(v: Any) -> Any:
    return v.upper() if isinstance(v, str) else v


def enum_schema(*values: str) -> WithJsonSchema:
    """Schema of a case-insensitive enum: each value as written, lower and upper case."""
    variants = sorted({f(v) for v in values for f in (str, str.lower, str.upper, str.title)})
    return WithJsonSchema({"type": "string", "enum": variants})


SCALAR_SCHEMA = WithJsonSchema({"type": ["string", "number", "boolean"]})
NULLABLE_SCALAR_SCHEMA = WithJsonSchema({"type": ["string", "number", "boolean", "null"]})


def plain_data(v: Any) -> Any:
    """Free-form YAML (``config``, ``service``, ...) as JSON-like data, so that the
    normalized task survives a dump: dates become ISO text, keys become strings,
    and NaN / infinity are refused."""
    if isinstance(v, dict):
        return {str(k): plain_data(x) for k, x in v.items()}
    if isinstance(v, list):
        return [plain_data(x) for x in v]
    if isinstance(v, (datetime.date, datetime.time)):
        return v.isoformat()
    if isinstance(v, float) and not math.isfinite(v):
        raise ValueError(f"{v} is not a finite number")
    return v


FreeForm = Annotated[dict[str, Any], BeforeValidator(plain_data)]


def scalar_to_str(v: Any) -> Any:
    """YAML scalars given where a string is expected (``PORT: 8080``) become strings."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, (datetime.date, datetime.time)):
        return v.isoformat()
    return v


DiskTier = Annotated[
    Literal["low", "medium", "high", "ultra", "best"],
    BeforeValidator(_lower),
    enum_schema("low", "medium", "high", "ultra", "best"),
]
NetworkTier = Annotated[
    Literal["standard", "best"], BeforeValidator(_lower), enum_schema("standard", "best")
]


class JobRecovery(_Model):
    strategy: Annotated[
        Literal["FAILOVER", "EAGER_NEXT_REGION", "NONE"],
        BeforeValidator(_upper),
        enum_schema("FAILOVER", "EAGER_NEXT_REGION", "NONE"),
    ] | None = None
    max_restarts_on_errors: Annotated[StrictInt, Field(ge=0, le=10_000)] | None = None
    recover_on_exit_codes: Annotated[
        list[Annotated[StrictInt, Field(ge=0, le=255)]] | None,
        BeforeValidator(lambda v: [v] if isinstance(v, int) else v),
        WithJsonSchema({"anyOf": [{"type": "integer"},
                                  {"type": "array", "items": {"type": "integer"}}]}),
    ] = None


JobRecoveryField = Annotated[
    JobRecovery,
    BeforeValidator(lambda v: {"strategy": v} if isinstance(v, str) else v),
    # schema.py puts the model's own schema where "x-skyc-model" names it.
    WithJsonSchema({"anyOf": [{"type": "string"}, {"x-skyc-model": "JobRecovery"}]}),
]


class Autostop(_Model):
    """``autostop: true`` (5 idle minutes), ``10``, ``"1h"``, ``{idle_minutes, down}``,
    or ``false`` (``enabled`` False)."""

    enabled: StrictBool = True
    idle_minutes: Annotated[int, BeforeValidator(_parse.parse_minutes)] = 5
    down: StrictBool = False
    wait_for: Annotated[
        Literal["jobs_and_ssh", "jobs", "none"],
        BeforeValidator(_lower),
        enum_schema("jobs_and_ssh", "jobs", "none"),
    ] | None = None


def _autostop_in(v: Any) -> Any:
    if isinstance(v, bool):
        return {"enabled": v}
    if isinstance(v, (int, str)):
        return {"idle_minutes": v}
    return v


def _autostop_out(a: Autostop) -> Any:
    if not a.enabled:
        return False
    out: dict[str, Any] = {"idle_minutes": a.idle_minutes, "down": a.down}
    if a.wait_for is not None:
        out["wait_for"] = a.wait_for
    return out


AutostopField = Annotated[
    Autostop,
    BeforeValidator(_autostop_in),
    PlainSerializer(_autostop_out),
    WithJsonSchema({
        "anyOf": [{"type": "boolean"}, {"type": "integer"}, {"type": "string"},
                  {"x-skyc-model": "Autostop"}]
    }),
]


def _image_id(v: Any) -> Any:
    if isinstance(v, str):
        if not v.strip() or v.strip() in ("docker:",):
            raise ValueError(f"invalid image_id {v!r}")
        return v.strip()
    if isinstance(v, dict) and v and all(
        isinstance(k, str) and isinstance(i, str) and i for k, i in v.items()
    ):
        return v
    raise ValueError(
        f"invalid image_id {v!r}: expected an image id, 'docker:<image>' or {{region: id}}"
    )


ImageIdField = Annotated[str | dict[str, str], BeforeValidator(_image_id)]
LabelValue = Annotated[str, BeforeValidator(scalar_to_str), SCALAR_SCHEMA]


class ResourcesEntry(_Model):
    """The fields of ``resources``; each ``any_of`` / ``ordered`` entry is one of
    these (entries cannot nest further alternatives)."""

    infra: InfraField | None = None
    cloud: str | None = Field(default=None, exclude=True, repr=False,
                              description="legacy; use infra")
    region: str | None = Field(default=None, exclude=True, repr=False,
                               description="legacy; use infra")
    zone: str | None = Field(default=None, exclude=True, repr=False,
                             description="legacy; use infra")
    accelerators: AcceleratorsField | None = None
    gpus: AcceleratorsField | None = Field(
        default=None, exclude=True, repr=False, description="alias of accelerators"
    )
    accelerator_args: FreeForm | None = None
    cpus: QuantityField | None = None
    memory: MemoryField | None = None
    instance_type: str | None = None
    use_spot: StrictBool | None = None
    disk_size: DiskSizeField | None = None
    disk_tier: DiskTier | None = None
    network_tier: NetworkTier | None = None
    ports: PortsField | None = None
    labels: dict[str, LabelValue] | None = None
    image_id: ImageIdField | None = None
    job_recovery: JobRecoveryField | None = None
    autostop: AutostopField | None = None
    priority: Annotated[StrictInt, Field(ge=0, le=1000)] | None = None

    @field_validator("cloud", "region", "zone")
    @classmethod
    def _legacy(cls, v: str | None, info: ValidationInfo) -> str | None:
        if v is not None and info.data.get("infra") is not None:
            raise ValueError(
                f"'{info.field_name}' cannot be combined with 'infra'; "
                "write infra: cloud/region/zone instead"
            )
        if info.field_name == "cloud" and v is not None:
            return _parse.normalize_cloud(v)
        if v is not None and (not v.strip() or "/" in v or v.strip() == "*"):
            raise ValueError(f"invalid {info.field_name} {v!r}")
        return v.strip() if v is not None else None

    @field_validator("accelerator_args")
    @classmethod
    def _tpu_vms_only(cls, v: dict[str, Any] | None) -> dict[str, Any] | None:
        if v is not None and v.get("tpu_vm") is False:
            raise ValueError("TPU Nodes (a host VM with a TPU attached) are not supported; "
                             "TPU VMs only: drop tpu_vm: false")
        return v

    @field_validator("gpus")
    @classmethod
    def _gpus(cls, v: Accelerators | None, info: ValidationInfo) -> Accelerators | None:
        if v is not None and info.data.get("accelerators") is not None:
            raise ValueError("give either 'accelerators' or 'gpus', not both")
        return v

    @model_validator(mode="after")
    def _normalize(self) -> ResourcesEntry:
        if self.gpus is not None:
            self.accelerators, self.gpus = self.gpus, None
        if any(v is not None for v in (self.cloud, self.region, self.zone)):
            if self.cloud in ("kubernetes", "ssh", "local") and self.zone is not None:
                raise ValueError(f"'zone' does not apply to cloud '{self.cloud}'")
            if self.cloud == "local" and self.region is not None:
                raise ValueError("'region' does not apply to cloud 'local'")
            self.infra = InfraSpec(cloud=self.cloud, region=self.region, zone=self.zone)
            self.cloud = self.region = self.zone = None
        return self


class Resources(ResourcesEntry):
    """``resources:`` of a task: fields, plus alternatives in ``any_of`` (equally
    good) or ``ordered`` (earlier preferred)."""

    any_of: list[ResourcesEntry] | None = Field(default=None, min_length=1)
    ordered: list[ResourcesEntry] | None = Field(default=None, min_length=1)

    @field_validator("ordered")
    @classmethod
    def _one_kind(
        cls, v: list[ResourcesEntry] | None, info: ValidationInfo
    ) -> list[ResourcesEntry] | None:
        if v is not None and info.data.get("any_of") is not None:
            raise ValueError("give either 'any_of' or 'ordered', not both")
        return v
