"""Parsers for the short string forms of a task file.

Each parser takes what YAML produced and returns a normalized value, or raises
``ValueError`` with a message meant for the user. Each has a matching
formatter so that a normalized task can be written back as YAML that loads to
the same value.
"""

from __future__ import annotations

import re
from typing import Any

from skyc.task.candidate import AcceleratorRequest, InfraSpec, Quantity

# Clouds SkyPilot knows, plus skyc's own ``local`` and ``ssh``. ``k8s`` is an alias.
KNOWN_CLOUDS = (
    "aws", "gcp", "azure", "kubernetes", "lambda", "runpod", "oci", "ibm", "scp",
    "vsphere", "cudo", "paperspace", "fluidstack", "do", "nebius", "vast",
    "hyperbolic", "seeweb", "primeintellect", "shadeform", "local", "ssh",
)
_CLOUD_ALIASES = {"k8s": "kubernetes"}

_NUMBER = r"(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_QUANTITY_RE = re.compile(rf"^\s*({_NUMBER})\s*(\+)?\s*$")
_MEMORY_TOKEN_RE = re.compile(rf"^({_NUMBER})\s*(?:GB|GIB|G)(\+)?$", re.IGNORECASE)
_ACC_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9._-]*$")
_SIZE_RE = re.compile(rf"^\s*({_NUMBER})\s*(GB|GIB|G|TB|TIB|T)?\s*$", re.IGNORECASE)
_DURATION_RE = re.compile(r"^\s*(\d+)\s*([smhd]?)\s*$", re.IGNORECASE)


def fmt_number(value: float) -> int | float:
    """4.0 -> 4, 0.5 -> 0.5: integral floats are written as ints."""
    return int(value) if float(value).is_integer() else value


# The largest values a task may ask for: far above any machine, low enough that an
# absurd number (1e24) is refused here rather than by a cloud, half-way through.
MAX_CPUS = 100_000
MAX_MEMORY_GB = 1_000_000
MAX_ACCELERATORS = 1024
MAX_DISK_GB = 65_536
MAX_MINUTES = 10 * 366 * 24 * 60


def _shown(raw: Any) -> str:
    text = repr(raw) if not isinstance(raw, str) else repr(raw[:40])
    return text if len(text) <= 40 else text[:37] + "..."


def _positive_number(raw: Any, what: str, most: float = float("inf")) -> float:
    if isinstance(raw, bool) or not isinstance(raw, (int, float, str)):
        raise ValueError(f"{what} must be a number, got {_shown(raw)}")
    try:
        value = float(raw)
    except (ValueError, OverflowError):
        raise ValueError(f"{what} must be a number, got {_shown(raw)}") from None
    if not value > 0 or value != value or value == float("inf"):
        raise ValueError(f"{what} must be a positive number, got {_shown(raw)}")
    if value > most:
        raise ValueError(f"{what} must be at most {int(most):,}, got {_shown(raw)}")
    return value


# --- quantities: cpus, memory -------------------------------------------------


def parse_quantity(raw: Any, *, unit: bool = False) -> Quantity:
    """``4`` / ``"4"`` (exactly 4) or ``"4+"`` (at least 4); memory may say ``"32GB+"``."""
    if isinstance(raw, bool) or not isinstance(raw, (int, float, str)):
        raise ValueError(f"expected a number like 4 or '4+', got {_shown(raw)}")
    most = MAX_MEMORY_GB if unit else MAX_CPUS
    if isinstance(raw, (int, float)):
        return Quantity(value=_positive_number(raw, "a quantity", most))
    text = raw.strip()
    if unit:
        text = re.sub(r"(?i)\s*(GB|GIB|G)(\+?)$", r"\2", text)
    m = _QUANTITY_RE.match(text)
    if not m:
        raise ValueError(f"expected a number like 4 or '4+', got {_shown(raw)}")
    value = _positive_number(m.group(1), "a quantity", most)
    return Quantity(value=value, at_least=bool(m.group(2)))


def fmt_quantity(q: Quantity) -> int | float | str:
    if q.at_least:
        return f"{fmt_number(q.value)}+"
    return fmt_number(q.value)


# --- accelerators --------------------------------------------------------------


def _parse_count(raw: Any, where: str) -> float:
    value = _positive_number(raw, f"accelerator count in {where!r}", MAX_ACCELERATORS)
    if value > 1 and not value.is_integer():
        raise ValueError(f"accelerator count in {where!r} must be a whole number when above 1")
    return value


def parse_accelerator(text: str, count: Any = None) -> AcceleratorRequest:
    """``A100``, ``A100:8``, ``A100:0.5``, ``tpu-v4-8``, ``80GB+``, ``80GB+:4``,
    ``H100:80GB+:8``; ``count`` is the value of the mapping form ``{A100: 8}``."""
    parts = [p.strip() for p in str(text).split(":")]
    name: str | None = None
    memory: float | None = None
    key_count: float | None = None
    rest = list(parts)
    if rest and _MEMORY_TOKEN_RE.match(rest[0]):
        memory = float(_MEMORY_TOKEN_RE.match(rest.pop(0)).group(1))  # type: ignore[union-attr]
    elif rest and _ACC_NAME_RE.match(rest[0]):
        name = rest.pop(0)
        if rest and _MEMORY_TOKEN_RE.match(rest[0]):
            memory = float(_MEMORY_TOKEN_RE.match(rest.pop(0)).group(1))  # type: ignore[union-attr]
    else:
        raise ValueError(
            f"invalid accelerator {text!r}: expected NAME[:COUNT] (e.g. 'A100:8') "
            "or a memory ask like '80GB+:1'"
        )
    if len(rest) == 1 and rest[0]:
        key_count = _parse_count(rest[0], text)
    elif rest:
        raise ValueError(f"invalid accelerator {text!r}: expected NAME[:MEMORY][:COUNT]")
    if key_count is not None and count is not None:
        raise ValueError(f"accelerator {text!r} gives its count twice")
    final = key_count if key_count is not None else (
        _parse_count(count, text) if count is not None else 1.0
    )
    if memory is not None and memory <= 0:
        raise ValueError(f"invalid accelerator memory in {text!r}")
    return AcceleratorRequest(name=name, count=final, min_memory_gib=memory)


def accelerator_key(a: AcceleratorRequest) -> str:
    """The accelerator without its count: ``A100``, ``H100:80GB+``, ``80GB+``."""
    parts = [a.name] if a.name else []
    if a.min_memory_gib is not None:
        parts.append(f"{fmt_number(a.min_memory_gib)}GB+")
    return ":".join(parts)


def fmt_accelerator(a: AcceleratorRequest) -> str:
    return f"{accelerator_key(a)}:{fmt_number(a.count)}"


# --- infra ----------------------------------------------------------------------


def canonical_cloud(name: str) -> str:
    """A cloud's name as skyc keys it (``k8s`` is ``kubernetes``), lower-case; no check
    that it is known (:func:`normalize_cloud` checks)."""
    cloud = name.strip().lower()
    return _CLOUD_ALIASES.get(cloud, cloud)


def normalize_cloud(raw: str) -> str:
    from difflib import get_close_matches

    cloud = raw.strip().lower()
    cloud = _CLOUD_ALIASES.get(cloud, cloud)
    if cloud not in KNOWN_CLOUDS:
        close = get_close_matches(cloud, [*KNOWN_CLOUDS, "k8s"], n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        raise ValueError(f"unknown cloud {raw!r}{hint}; known: {', '.join(KNOWN_CLOUDS)}")
    return cloud


def parse_infra(raw: Any) -> InfraSpec:
    """``aws``, ``aws/us-east-1``, ``aws/us-east-1/us-east-1a``, ``*/us-east-1``,
    ``k8s`` / ``k8s/<context>``, ``ssh/<pool>``, ``local``."""
    if not isinstance(raw, str) or not raw.strip():
        raise ValueError(f"infra must be a string like 'aws/us-east-1', got {raw!r}")
    text = raw.strip()
    head, sep, tail = text.partition("/")
    cloud = None if head == "*" else normalize_cloud(head)
    if cloud in ("kubernetes", "ssh"):
        # A kubernetes context may itself contain '/', so keep the rest whole.
        if sep and not tail.strip():
            raise ValueError(f"infra {raw!r}: empty {cloud} name after '/'")
        return InfraSpec(cloud=cloud, region=tail.strip() or None)
    if cloud == "local":
        if tail:
            raise ValueError(f"infra {raw!r}: 'local' takes no region or zone")
        return InfraSpec(cloud="local")
    rest = [p.strip() for p in tail.split("/")] if tail else []
    if len(rest) > 2 or any(p == "" for p in rest):
        raise ValueError(f"infra {raw!r}: expected CLOUD[/REGION[/ZONE]]")
    region = rest[0] if rest and rest[0] != "*" else None
    zone = rest[1] if len(rest) > 1 and rest[1] != "*" else None
    return InfraSpec(cloud=cloud, region=region, zone=zone)


def fmt_infra(spec: InfraSpec) -> str:
    cloud = {"kubernetes": "k8s"}.get(spec.cloud or "", spec.cloud or "*")
    if spec.cloud in ("kubernetes", "ssh"):
        return f"{cloud}/{spec.region}" if spec.region else cloud
    parts = [cloud]
    if spec.region or spec.zone:
        parts.append(spec.region or "*")
    if spec.zone:
        parts.append(spec.zone)
    return "/".join(parts)


# --- ports, sizes, durations -------------------------------------------------------


def _one_port(raw: Any) -> str:
    if isinstance(raw, bool) or not isinstance(raw, (int, str)):
        raise ValueError(f"invalid port {raw!r}: expected 8080 or '9000-9010'")
    text = str(raw).strip()
    m = re.match(r"^(\d+)(?:\s*-\s*(\d+))?$", text)
    if not m:
        raise ValueError(f"invalid port {raw!r}: expected 8080 or '9000-9010'")
    lo = int(m.group(1))
    hi = int(m.group(2)) if m.group(2) else lo
    if not (1 <= lo <= 65535 and 1 <= hi <= 65535) or hi < lo:
        raise ValueError(f"invalid port {raw!r}: ports are 1-65535, low end first")
    return str(lo) if lo == hi else f"{lo}-{hi}"


def parse_ports(raw: Any) -> tuple[str, ...]:
    items = raw if isinstance(raw, list) else [raw]
    out: list[str] = []
    bad: list[str] = []
    for item in items:
        try:
            port = _one_port(item)
        except ValueError:
            bad.append(repr(item))
            continue
        if port not in out:
            out.append(port)
    if bad:
        raise ValueError(
            f"invalid port{'s' if len(bad) > 1 else ''} {', '.join(bad)}: "
            "expected 1-65535 or a range like '9000-9010'"
        )
    return tuple(out)


def parse_size_gb(raw: Any) -> int:
    """Disk size in GB: ``256``, ``"256GB"``, ``"1TB"``."""
    if isinstance(raw, bool) or not isinstance(raw, (int, float, str)):
        raise ValueError(f"disk_size must be a size in GB like 256, got {raw!r}")
    m = _SIZE_RE.match(str(raw))
    if not m:
        raise ValueError(f"disk_size must be a size in GB like 256 or '1TB', got {raw!r}")
    value = float(m.group(1)) * (1024 if (m.group(2) or "g").lower().startswith("t") else 1)
    if not value.is_integer() or value <= 0:
        raise ValueError(f"disk_size must be a positive whole number of GB, got {raw!r}")
    if value > MAX_DISK_GB:
        raise ValueError(f"disk_size must be at most {MAX_DISK_GB:,} GB, got {_shown(raw)}")
    return int(value)


def parse_minutes(raw: Any) -> int:
    """``10`` (minutes), ``"10m"``, ``"1h"``, ``"1d"``, ``"30s"`` (rounded up)."""
    if isinstance(raw, bool):
        raise ValueError(f"expected minutes, got {raw!r}")
    if isinstance(raw, int):
        if raw < 0:
            raise ValueError(f"minutes must not be negative, got {raw}")
        if raw > MAX_MINUTES:
            raise ValueError(f"minutes must be at most {MAX_MINUTES:,} (ten years), "
                             f"got {_shown(raw)}")
        return raw
    m = _DURATION_RE.match(raw) if isinstance(raw, str) else None
    if not m:
        raise ValueError(f"expected minutes or a duration like '10m', '1h', '1d', got {raw!r}")
    digits = m.group(1)
    unit = m.group(2).lower()
    n = int(digits) if len(digits) <= 12 else MAX_MINUTES * 100_000
    minutes = -(-n // 60) if unit == "s" else n * {"": 1, "m": 1, "h": 60, "d": 1440}[unit]
    if minutes > MAX_MINUTES:
        raise ValueError(f"{raw.strip()!r} is longer than ten years")
    return minutes
