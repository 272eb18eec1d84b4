"""A task's ``volumes``, as SkyPilot writes them: a volume by name (a Kubernetes
PersistentVolumeClaim that exists), or ``{size, labels, config}`` for an ephemeral one
made with the cluster and deleted with it. Each becomes a :class:`VolumeClaim` that a
target able to mount volumes (``Capabilities.volumes``) lowers."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from skyc.task.candidate import VolumeClaim

ACCESS_MODES = ("ReadWriteOnce", "ReadWriteMany", "ReadOnlyMany", "ReadWriteOncePod")
_SIZE = re.compile(r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|K|M|G|T|P)?$")
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
_KEYS = {"size", "labels", "config"}
_CONFIG_KEYS = {"storage_class_name", "access_mode", "namespace"}


def _size(target: str, value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return f"{value}Gi"  # a bare number is GiB, as SkyPilot reads it
    if isinstance(value, str) and _SIZE.match(value.strip()):
        return value.strip()
    raise ValueError(f"volumes.{target}.size: {value!r} is not a size (e.g. 100Gi, or 100 "
                     "for GiB)")


def _ephemeral(target: str, spec: Mapping[str, Any]) -> VolumeClaim:
    unknown = sorted(set(spec) - _KEYS)
    if unknown:
        raise ValueError(f"volumes.{target}: unknown field {unknown[0]!r} (a volume made "
                         "with the cluster takes size, labels and config)")
    if "size" not in spec:
        raise ValueError(f"volumes.{target}: give a volume's name, or {{size: ...}} for "
                         "one made with the cluster and deleted with it")
    config = spec.get("config") or {}
    if not isinstance(config, Mapping) or set(config) - _CONFIG_KEYS:
        raise ValueError(f"volumes.{target}.config: takes {', '.join(sorted(_CONFIG_KEYS))}")
    mode = str(config.get("access_mode") or "ReadWriteOnce")
    if mode not in ACCESS_MODES:
        raise ValueError(f"volumes.{target}.config.access_mode: {mode!r} is not one of "
                         f"{', '.join(ACCESS_MODES)}")
    labels = spec.get("labels") or {}
    if not isinstance(labels, Mapping):
        raise ValueError(f"volumes.{target}.labels: a mapping of label names to values")
    return VolumeClaim(target=target, size=_size(target, spec["size"]), access_mode=mode,
                       storage_class=config.get("storage_class_name"),
                       labels={str(k): str(v) for k, v in labels.items()})


def volume_claims(volumes: Mapping[str, Any]) -> tuple[VolumeClaim, ...]:
    """The task's volumes in target order; ValueError naming the field when one cannot
    be used as written."""
    claims = []
    for target, spec in sorted(volumes.items()):
        if not target.startswith("/"):
            raise ValueError(f"volumes.{target}: a volume is mounted at an absolute path "
                             "(e.g. /mnt/data)")
        if isinstance(spec, str):
            if not _NAME.match(spec):
                raise ValueError(f"volumes.{target}: {spec!r} is not a volume (PVC) name: "
                                 "lowercase letters, digits, '-' and '.'")
            claims.append(VolumeClaim(target=target, name=spec))
        else:
            claims.append(_ephemeral(target, spec))
    return tuple(claims)
