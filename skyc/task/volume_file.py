"""A volume file (SkyPilot's ``sky volumes apply volume.yaml``): a Kubernetes
PersistentVolumeClaim skyc creates (or records, with ``use_existing``), with a life of
its own: tasks mount it by name (``volumes: {/mnt/data: NAME}``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from skyc.task.volumes import ACCESS_MODES

_NAME = r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$"
SUPPORTED_TYPE = "k8s-pvc"


class VolumeConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    namespace: str | None = None
    storage_class_name: str | None = None
    access_mode: Literal["ReadWriteOnce", "ReadWriteMany", "ReadOnlyMany",
                         "ReadWriteOncePod"] = "ReadWriteOnce"


class VolumeFile(BaseModel):
    """One volume, as SkyPilot's volume YAML writes it."""

    model_config = ConfigDict(extra="forbid")

    name: Annotated[str, StringConstraints(pattern=_NAME)]
    type: str = SUPPORTED_TYPE
    infra: str = "k8s"
    size: Annotated[str, StringConstraints(pattern=r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi)?$")] \
        | int | None = None
    use_existing: bool = False
    labels: dict[str, str] = Field(default_factory=dict)
    config: VolumeConfig = Field(default_factory=VolumeConfig)

    @model_validator(mode="after")
    def _what_skyc_makes(self) -> VolumeFile:
        if self.type != SUPPORTED_TYPE:
            raise ValueError(f"type: {self.type!r}: skyc makes Kubernetes volumes only "
                             f"(type: {SUPPORTED_TYPE}); RunPod volumes are not supported")
        cloud, _, _ = self.infra.partition("/")
        if cloud not in ("k8s", "kubernetes"):
            raise ValueError(f"infra: {self.infra!r}: a volume lives in a Kubernetes "
                             "cluster (k8s or k8s/CONTEXT)")
        if self.size is None and not self.use_existing:
            raise ValueError("size: a new volume needs a size (e.g. 10Gi), or set "
                             "use_existing: true to record a claim that exists")
        return self

    @property
    def context(self) -> str | None:
        return self.infra.partition("/")[2] or None

    @property
    def storage(self) -> str:
        """The size as Kubernetes takes it (a bare number is GiB)."""
        return f"{self.size}Gi" if isinstance(self.size, int) else str(self.size or "")


def load_volume_file(path: Path) -> VolumeFile:
    """Read and check a volume file; TaskSpecError naming the field when it is wrong."""
    from pydantic import ValidationError

    from skyc.errors import SpecProblem, TaskSpecError
    from skyc.task.documents import load_yaml
    from skyc.task.inputs import CONFIG

    data: Any = load_yaml(path, str(path), CONFIG)
    if not isinstance(data, dict):
        raise TaskSpecError([SpecProblem(str(path), "", "a volume file is a mapping "
                                         "(name, type, infra, size, ...)")])
    try:
        return VolumeFile.model_validate(data)
    except ValidationError as exc:
        raise TaskSpecError([SpecProblem(str(path), ".".join(str(p) for p in e["loc"]),
                                         e["msg"].removeprefix("Value error, "))
                             for e in exc.errors()]) from None


__all__ = ["ACCESS_MODES", "VolumeFile", "load_volume_file"]
