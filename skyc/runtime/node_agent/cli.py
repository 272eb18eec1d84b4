"""The agent's command line: each sub-command's arguments, parsed without argparse,
and :func:`main`."""

from __future__ import annotations

import sys

from skyc.runtime.node_agent.accelerators import cmd_facts
from skyc.runtime.node_agent.autostop import cmd_autostop
from skyc.runtime.node_agent.base import PHASES, VERSION, Args
from skyc.runtime.node_agent.mounts import FLUSH_TIMEOUT, cmd_mounts
from skyc.runtime.node_agent.status import cmd_status
from skyc.runtime.node_agent.stop import cmd_cancel, cmd_stop_all
from skyc.runtime.node_agent.supervise import cmd_run, cmd_tail
from skyc.runtime.node_agent.sync import cmd_sync_apply, cmd_sync_manifest

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


# ---------------------------------------------------------------- entry point


# Each command's positional arguments and options, as (name, kind) and
# ``--flag: (name, kind, default)``; a kind is int, str, a tuple of choices, or FLAG (an
# option without a value). skyc writes these command lines, never a person; parsing them
# here rather than with argparse keeps argparse (and the shutil its subcommands import)
# off the start of every phase.
FLAG = "flag"
COMMANDS: dict[str, tuple[Any, tuple[tuple[str, Any], ...],
                          dict[str, tuple[str, Any, Any]]]] = {
    "version": (lambda a: print(VERSION) or 0, (), {}),
    "facts": (cmd_facts, (), {}),
    "run": (cmd_run, (("job", int), ("phase", PHASES)), {
        "--follow": ("follow", FLAG, False), "--setup-hash": ("setup_hash", str, ""),
        "--force": ("force", FLAG, False)}),
    "tail": (cmd_tail, (("job", int),), {
        "--phase": ("phase", (*PHASES, "all"), "all"), "--follow": ("follow", FLAG, False)}),
    "cancel": (cmd_cancel, (("job", int),), {
        "--reason": ("reason", ("user", "peer", "abort"), "user")}),
    "stop-all": (cmd_stop_all, (), {}),
    "status": (cmd_status, (), {"--job": ("job", int, None)}),
    "autostop": (cmd_autostop, (("action", ("set", "cancel", "status", "watch")),),
                 {"--id": ("id", str, "")}),
    "sync-manifest": (cmd_sync_manifest, (("target", str),), {}),
    "sync-apply": (cmd_sync_apply, (("target", str),), {}),
    "mounts": (cmd_mounts, (("action", ("apply", "flush", "release", "check")),),
               {"--timeout": ("timeout", float, FLUSH_TIMEOUT), "--job": ("job", int, None)}),
}


class UsageError(Exception):
    """A command line the agent does not understand."""


def _convert(name: str, kind: Any, text: str) -> Any:
    if isinstance(kind, tuple):
        if text not in kind:
            raise UsageError(f"{name}: {text!r} is not one of {', '.join(kind)}")
        return text
    try:
        return kind(text)
    except ValueError:
        raise UsageError(f"{name}: {text!r} is not a valid {kind.__name__}") from None


def parse_args(argv: list[str]) -> tuple[Any, Args]:
    """The command ``argv`` names and its arguments; UsageError when it is not one."""
    if not argv or argv[0] not in COMMANDS:
        raise UsageError(f"expected a command: {', '.join(COMMANDS)}")
    fn, positionals, options = COMMANDS[argv[0]]
    values: dict[str, Any] = {dest: default for dest, _, default in options.values()}
    rest: list[str] = []
    it = iter(argv[1:])
    for arg in it:
        flag, eq, inline = arg.partition("=")
        if not flag.startswith("--"):
            rest.append(arg)
            continue
        if flag not in options:
            raise UsageError(f"{argv[0]}: unknown option {flag}")
        dest, kind, _ = options[flag]
        if kind == FLAG:
            if eq:
                raise UsageError(f"{flag} takes no value")
            values[dest] = True
            continue
        text = inline if eq else next(it, None)
        if text is None:
            raise UsageError(f"{flag} needs a value")
        values[dest] = _convert(flag, kind, text)
    if len(rest) != len(positionals):
        names = " ".join(n.upper() for n, _ in positionals) or "no arguments"
        raise UsageError(f"{argv[0]}: expected {names}, got {len(rest)} argument(s)")
    for (dest, kind), text in zip(positionals, rest):  # noqa: B905 (3.8; lengths equal)
        values[dest] = _convert(dest, kind, text)
    return fn, Args(values)


def main(argv: list[str] | None = None) -> int:
    try:
        fn, args = parse_args(sys.argv[1:] if argv is None else argv)
    except UsageError as exc:
        sys.stderr.write(f"skyc-agent: error: {exc}\n")
        return 2
    code: int = fn(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
