"""Options that mean the same on several commands (plan, apply, exec, compile)."""

from __future__ import annotations

from collections.abc import Sequence

INFRA_HELP = (
    "Where to run: CLOUD, CLOUD/REGION or CLOUD/REGION/ZONE (case-insensitive; `*` is "
    "any), as in SkyPilot's --infra: it narrows the task's own resources.infra and the "
    "enabled infra, and an infra named here is planned even without credentials. Give it "
    "once; leave it out to plan over every enabled cloud."
)
OPTIMIZE_CHOICES = ("cost", "time")


def one_infra(values: Sequence[str]) -> str | None:
    """The one ``--infra`` given (None when none); refused when given twice, naming both."""
    from skyc.errors import ConfigError

    given = [v for v in values if v.strip()]
    if len(given) > 1:
        raise ConfigError(
            f"--infra given {len(given)} times ({', '.join(given)}): give it once",
            hint="leave --infra out to plan over every enabled cloud, or list the clouds "
                 "to use under infra: in $SKYC_HOME/config.yaml")
    if not given:
        return None
    head, sep, rest = given[0].strip().partition("/")
    return head.lower() + sep + rest


def check_choice(flag: str, value: str, choices: Sequence[str]) -> str:
    from skyc.errors import ConfigError

    if value not in choices:
        raise ConfigError(f"{flag} {value}: expected one of {', '.join(choices)}")
    return value
