"""Options that mean the same on several commands (plan, apply, exec, compile; -u on
status, queue and jobs queue), and the question put before acting on another's cluster."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import typer

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
    where = head.lower() + sep + rest
    from skyc.task._parse import parse_infra

    try:  # the task format's own infra syntax: the same words and did-you-mean
        parse_infra(where)
    except ValueError as exc:
        raise ConfigError(f"--infra {given[0]}: {exc}",
                          hint="CLOUD[/REGION[/ZONE]], as in SkyPilot: e.g. --infra "
                          "aws/us-east-1; `skyc check` lists the infra enabled here") from None
    return where


def check_choice(flag: str, value: str, choices: Sequence[str]) -> str:
    from skyc.errors import ConfigError

    if value not in choices:
        raise ConfigError(f"{flag} {value}: expected one of {', '.join(choices)}")
    return value


def gpus_option() -> Any:
    return typer.Option(None, "--gpus", metavar="NAME:COUNT",
                        help="Override resources.accelerators, e.g. A100:8.")


def cpus_option() -> Any:
    return typer.Option(None, "--cpus", metavar="N[+]",
                        help="Override resources.cpus (N exactly, N+ at least).")


def memory_option() -> Any:
    return typer.Option(None, "--memory", metavar="GB[+]",
                        help="Override resources.memory (GiB; GB+ at least).")


def instance_type_option() -> Any:
    return typer.Option(None, "--instance-type", metavar="TYPE",
                        help="Override resources.instance_type.")


def disk_size_option() -> Any:
    return typer.Option(None, "--disk-size", metavar="GB", parser=_disk_size,
                        help="Override resources.disk_size (GB).")


def use_spot_option() -> Any:
    return typer.Option(None, "--use-spot/--no-use-spot",
                        help="Override resources.use_spot.")


def num_nodes_option() -> Any:
    return typer.Option(None, "--num-nodes", metavar="N", parser=_num_nodes,
                        help="Override num_nodes.")


def env_file_option() -> Any:
    return typer.Option(None, "--env-file", metavar="FILE",
                        help="KEY=VALUE lines (a dotenv file); --env wins over it.")


def _disk_size(value: Any) -> int:
    from skyc.cli.params import Count

    return Count(1, 1_000_000)(value)


def _num_nodes(value: Any) -> int:
    from skyc.cli.params import Count

    return Count(1, 10_000)(value)


def env_values(env_file: Path | None, env: list[str]) -> dict[str, str]:
    """``--env-file`` then ``--env`` (which wins), as one mapping."""
    from skyc.task import parse_env_flags

    base: dict[str, str] = {}
    if env_file is not None:
        from skyc.task.envfile import read_env_file

        base = read_env_file(env_file)
    return {**base, **parse_env_flags(env)}


def all_users_option() -> Any:
    """``-u/--all-users`` (SkyPilot's): everyone's records, not only the caller's."""
    return typer.Option(False, "-u", "--all-users",
                        help="Everyone's, with an OWNER column (default: yours only).")


def terminal_ask() -> Callable[[str], bool] | None:
    """A yes/no question on the terminal (default no); None when stdin is not one."""
    import sys

    if not sys.stdin.isatty():
        return None

    def ask(question: str) -> bool:
        return bool(typer.confirm(question, default=False, err=True))

    return ask
