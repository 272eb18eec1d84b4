"""``_metadata``: the free-form section of SkyPilot's task schema (an object SkyPilot
keeps as it is), and skyc's own key inside it, ``_metadata.skyc``.

A task file that uses it still loads in SkyPilot; every other key of ``_metadata``
is kept as written. ``_metadata.skyc.duration`` is how long the task runs, for a
pipeline's total cost (``skyc plan``)::

    _metadata:
      skyc:
        duration: 6h                      # on whatever placement is chosen
    # or measured on other hardware, scaled to the chosen one by the time model:
    #   duration: {time: 10h, measured_on: "A100:8"}

A time is a number with a unit, ``s``, ``m``, ``h`` or ``d`` (``90m``, ``1.5h``,
``1h30m``); ``measured_on`` is ``NAME:COUNT`` per node, with the task's ``num_nodes``
(not ``on``: YAML reads a bare ``on`` key as ``true``).

``_metadata.skyc.reads`` says how much the task reads from each bucket (``{"s3://bucket/
prefix": 2TB}``; a bare number is GB): reading it from another region or cloud costs
egress, which the optimizer counts, keeping the task near its data when that is
cheaper.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, WithJsonSchema, model_validator

from skyc.task.candidate import AcceleratorRequest
from skyc.task.resources import plain_data

_PART = re.compile(r"(\d+(?:\.\d+)?|\.\d+)\s*([smhd])", re.IGNORECASE)
_WHOLE = re.compile(r"^\s*(?:(?:\d+(?:\.\d+)?|\.\d+)\s*[smhd]\s*)+$", re.IGNORECASE)
_HOURS_PER = {"s": 1 / 3600, "m": 1 / 60, "h": 1.0, "d": 24.0}
# Ten years: far above any run, low enough that a typo (1000000d) is refused.
MAX_HOURS = 10 * 366 * 24.0


def duration_hours(text: str) -> float:
    """``"90m"`` -> 1.5; ``"1h30m"`` -> 1.5; ``"2d"`` -> 48.0."""
    return sum(float(n) * _HOURS_PER[u.lower()] for n, u in _PART.findall(text))


def _time(v: Any) -> Any:
    if isinstance(v, bool):
        raise ValueError(f"expected a duration like '6h' or '90m', got {v!r}")
    if isinstance(v, (int, float)):
        raise ValueError(f"a duration needs a unit: '{v}h', '{v}m' or '{v}s', not {v!r}")
    if not isinstance(v, str) or not _WHOLE.match(v):
        raise ValueError(f"expected a duration like '6h', '90m', '1h30m' or '2d', got {v!r}")
    hours = duration_hours(v)
    if not hours > 0:
        raise ValueError(f"a duration must be longer than 0, got {v!r}")
    if hours > MAX_HOURS:
        raise ValueError(f"{v!r} is longer than ten years")
    return v.strip()


def _reference(v: Any) -> Any:
    from skyc.task._parse import parse_accelerator

    if not isinstance(v, str):
        raise ValueError(f"expected NAME:COUNT (e.g. 'A100:8'), got {v!r}")
    if parse_accelerator(v).name is None:
        raise ValueError(f"measured_on names an accelerator (e.g. 'A100:8'), not {v!r}")
    return v.strip()


class Duration(BaseModel):
    """How long a task runs: ``time``, on the chosen placement or, with ``on``, on that
    accelerator (``measured_on``, per node), scaled to the chosen one by the time model."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    time: Annotated[str, BeforeValidator(_time)]
    measured_on: Annotated[str, BeforeValidator(_reference)] | None = None

    @model_validator(mode="before")
    @classmethod
    def _bare_on(cls, v: Any) -> Any:
        if isinstance(v, dict) and (True in v or "True" in v):
            raise ValueError("write measured_on: NAME:COUNT (YAML reads a bare 'on' key as true)")
        return v

    @property
    def hours(self) -> float:
        return duration_hours(self.time)

    @property
    def reference(self) -> AcceleratorRequest | None:
        from skyc.task._parse import parse_accelerator

        return parse_accelerator(self.measured_on) if self.measured_on is not None else None


_DURATION_SCHEMA = WithJsonSchema({"anyOf": [{"type": "string"}, {
    "type": "object", "required": ["time"], "additionalProperties": False,
    "properties": {"time": {"type": "string"}, "measured_on": {"type": "string"}}}]})


def _short_duration(v: Any) -> Any:
    return {"time": v} if isinstance(v, (str, int, float)) else v


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?|\.\d+)\s*(B|KB|MB|GB|TB|PB|KiB|MiB|GiB|TiB|PiB)?\s*$",
                   re.IGNORECASE)
_UNITS = {"b": 1e-9, "kb": 1e-6, "mb": 1e-3, "gb": 1.0, "tb": 1e3, "pb": 1e6,
          "kib": 1024 / 1e9, "mib": 1024**2 / 1e9, "gib": 1024**3 / 1e9,
          "tib": 1024**4 / 1e9, "pib": 1024**5 / 1e9}


def size_gb(v: Any) -> float:
    """A data size in GB: a number (GB) or a number with a unit (``2TB``, ``500GiB``)."""
    if isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0:
        return float(v)
    match = _SIZE.match(v) if isinstance(v, str) else None
    if match is None:
        raise ValueError(f"expected a size such as 2TB, 500GiB or a number of GB, got {v!r}")
    return float(match.group(1)) * _UNITS[(match.group(2) or "GB").lower()]


def _reads(v: Any) -> Any:
    from skyc.task.buckets import bucket_of_url

    if not isinstance(v, dict):
        raise ValueError("reads maps bucket URLs to the size read from each")
    out = {}
    for url, size in v.items():
        if not isinstance(url, str) or bucket_of_url(url) is None:
            raise ValueError(f"reads: {url!r} is not a bucket URL (s3://, gs://, r2://, "
                             "or an Azure blob URL)")
        out[url] = size_gb(size)
    return out


class SkycMetadata(BaseModel):
    """``_metadata.skyc``: what skyc reads from a task beyond SkyPilot's fields."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    duration: Annotated[Duration, BeforeValidator(_short_duration), _DURATION_SCHEMA] | None = None
    reads: Annotated[dict[str, float], BeforeValidator(_reads), WithJsonSchema(
        {"type": "object", "additionalProperties": {"type": ["string", "number"]}})] | None = None


class TaskMetadata(BaseModel):
    """``_metadata``: any keys (kept as written, as SkyPilot does); ``skyc`` is checked."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    skyc: SkycMetadata | None = None

    @model_validator(mode="before")
    @classmethod
    def _mapping(cls, v: Any) -> Any:
        if not isinstance(v, dict):
            raise ValueError(f"_metadata is a mapping, got {type(v).__name__}")
        return plain_data(v)
