"""Blocked placements: where not to go (failover asks for the next best this way)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from skyc.errors import ConfigError
from skyc.task._parse import canonical_cloud


class Blocked(BaseModel):
    """A zone, a region or a whole cloud to avoid. None is a wildcard.

    ``Blocked(cloud="aws", region="us-east-1")`` blocks the whole region;
    ``Blocked.parse("aws/us-east-1/*")`` is the same; ``"aws"`` or ``"aws/*"``
    blocks the cloud; ``"aws/us-east-1/use1-az1"`` one zone.
    """

    # Built on first use: a plan without failover never validates one.
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    cloud: str | None = None
    region: str | None = None
    zone: str | None = None

    @classmethod
    def parse(cls, text: str, *, what: str = "blocked placement") -> Blocked:
        parts = [p.strip() for p in text.strip().strip("/").split("/")]
        if not parts or len(parts) > 3 or any(not p for p in parts):
            raise ConfigError(f"{what} '{text}': expected cloud[/region[/zone]]",
                              hint="use '*' as a wildcard, e.g. aws/us-east-1/*")
        vals = [None if p == "*" else p for p in parts] + [None] * (3 - len(parts))
        cloud = None if vals[0] is None else canonical_cloud(vals[0])
        return cls(cloud=cloud, region=vals[1], zone=vals[2])

    def matches(self, cloud: str, region: str | None, zone: str | None) -> bool:
        return (
            (self.cloud is None or self.cloud == cloud)
            and (self.region is None or self.region == region)
            and (self.zone is None or self.zone == zone)
        )

    def __str__(self) -> str:
        return "/".join(p or "*" for p in (self.cloud, self.region, self.zone))


def parse_infra(text: str | None) -> tuple[str | None, str | None, str | None]:
    """``--infra`` text -> (cloud, region, zone); ``*`` and missing parts are None."""
    if text is None or not text.strip():
        return None, None, None
    b = Blocked.parse(text, what="infra")
    return b.cloud, b.region, b.zone
