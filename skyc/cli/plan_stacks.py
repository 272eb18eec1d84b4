"""``skyc plan``'s per-cluster stacks as printed: the engine diff's progress on stderr,
each stack's changes after the placement's table, the policy's verdict, the saved
plan file. The diffs themselves are computed by :mod:`skyc.apply.plan_diff`."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from skyc.apply.plan_diff import PlanProgress

# Where ``skyc compile`` (skyc/cli/cmd_stacks.py) finds plan.json's writer.


class StackProgress(PlanProgress):
    """Says on stderr which stack's engine runs (a spinner on a terminal, one line each
    otherwise), and how long the diffs took: an engine plan takes tens of seconds."""

    def __init__(self) -> None:
        self._names: list[str] = []
        self._start = 0.0
        self._status: Any = None

    def diff_started(self, clusters: list[str]) -> None:
        import time

        from skyc.cli.output import err_console

        self._names = list(clusters)
        self._start = time.monotonic()
        if err_console.is_terminal:
            self._status = err_console.status("engine diff...")
            self._status.start()

    def stack(self, cluster: str, engine: str) -> None:
        from skyc.cli.output import print_line

        index = self._names.index(cluster) + 1
        text = (f"engine diff {index}/{len(self._names)}: {engine} plan for stack {cluster} "
                "(--no-diff skips it)")
        if self._status is not None:
            self._status.update(text)
        else:
            print_line(text, err=True)

    def diff_done(self, stacks: list[dict[str, Any]]) -> None:
        import time

        from skyc.cli.output import print_line

        self.close()
        if any(st["status"] == "ok" for st in stacks):
            print_line(f"engine diff done in {time.monotonic() - self._start:.0f}s", err=True)

    def close(self) -> None:
        """Stop the spinner (also when the plan failed)."""
        if self._status is not None:
            self._status.stop()
            self._status = None


def _short(value: Any, width: int = 90) -> str:
    """An input value on one line, cut to ``width`` characters."""
    import json

    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= width else text[: width - 3] + "..."


_SIGNS = {"create": "+", "delete": "-", "update": "~", "replace": "-/+", "read": "<="}


def print_stacks(stacks: list[dict[str, Any]]) -> None:
    from skyc.cli.output import print_line, print_warning

    for st in stacks:
        if st["status"] != "ok":
            print_warning(f"{st['note']}; `skyc plan --no-diff` shows the placement only")
            continue
        parts = [f"{n} to {a}" for a, n in st["summary"].items() if a not in ("no-op", "read")]
        if not parts:
            parts.append("no changes")
        if st["summary"].get("no-op"):
            parts.append(f"{st['summary']['no-op']} unchanged")
        preview = ", offline preview" if st["preview"] == "offline" else ""
        print_line(f"stack {st['cluster']} ({st['engine']}{preview}): {', '.join(parts)}")
        for rc in st["resource_changes"]:
            action = "replace" if rc["actions"] == ["delete", "create"] else rc["actions"][0]
            if action == "no-op":
                continue
            if "inputs" not in rc:
                print_line(f"  {_SIGNS.get(action, action):>3} {rc['address']}")
                continue
            name = rc["address"].rsplit("::", 1)[-1]
            print_line(f"  {_SIGNS.get(action, action):>3} {name} ({rc['type']})")
            for key, value in sorted(rc["inputs"].items()):
                print_line(f"        {key} = {_short(value)}")
        if st["note"]:
            print_line(f"  note: {st['note']}")


def print_saved(out: Path) -> None:
    """``skyc plan -o FILE``: where the saved plan file is, and how to apply it."""
    from skyc.cli.output import print_line

    again = f"skyc apply {shlex.quote(str(out))}"
    print_line(f"plan saved to {out}: apply exactly this plan with `{again}` "
               "(it holds no secret values; its engine plans may hold other sensitive "
               "values of the stacks: keep it as you keep their state)", err=True)


def print_policy(result: dict[str, Any] | None) -> None:
    from skyc.cli.output import print_line

    if result is None:
        return
    if result["ok"]:
        print_line(f"policy {result['file']}: passed")
        return
    print_line(f"policy {result['file']}: {len(result['violations'])} violation(s)")
    for v in result["violations"]:
        where = f"cluster {v['cluster']}: " if v["cluster"] else ""
        print_line(f"  {v['rule']}: {where}{v['message']}")


def print_unknown(notes: list[str]) -> None:
    """``--detailed-exitcode``'s 1: the clusters whose change is not known, and why."""
    from skyc.cli.output import print_warning

    for note in notes:
        print_warning(f"{note}: whether it changes is not known (exit 1)")
