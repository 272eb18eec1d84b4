"""A stand-in for the ``pulumi`` CLI, which cannot be installed on these machines (it is
on no package index they reach). It is not Pulumi: it records every call (argv, the
PULUMI_* environment, the working directory) in ``$STANDIN_LOG`` and answers the
commands the Automation API runs the way the real CLI does: ``version``,
``stack select/init``, ``config set-all``, ``preview``/``up``/``refresh``/``destroy``
(engine events on the ``--event-log`` file, a summary event last), ``stack output``,
``stack history`` and ``stack export``. The program is "run" by reading the resources
the engine would register from skyc's own offline preview (the real SDK under the
mock runtime). ``STANDIN_FAIL`` makes ``up`` fail with that text as an error
diagnostic on the first instance (the resource type ``STANDIN_FAIL_TYPE``, by default
``aws:ec2/instance:Instance``), as the real CLI reports a cloud's refusal.
``STANDIN_SLOW_UP`` (seconds) makes each resource ``up`` creates take that long; on
SIGINT (Ctrl-C) the stand-in then behaves as the real CLI does: it records the signal
in ``$STANDIN_LOG``, lets the resource in flight finish, starts no other, saves what
was created in its state and exits 255 with "update canceled". Every update ends its
event log with a cancel event, as the real CLI's does.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

VERSION = "v3.200.0"


def _flag(args: list[str], name: str) -> str | None:
    if name in args:
        i = args.index(name)
        return args[i + 1] if i + 1 < len(args) else None
    return None


def _state_file(stack: str) -> Path:
    url = os.environ.get("PULUMI_BACKEND_URL", "")
    root = Path(url.removeprefix("file://")) if url.startswith("file://") else Path.cwd()
    root.mkdir(parents=True, exist_ok=True)
    return root / f"standin-{stack}.json"


def _load(stack: str) -> dict[str, Any]:
    path = _state_file(stack)
    return json.loads(path.read_text()) if path.exists() else {"resources": [], "outputs": {},
                                                               "config": {}, "history": []}


def _save(stack: str, state: dict[str, Any]) -> None:
    _state_file(stack).write_text(json.dumps(state, indent=2, sort_keys=True))


def _program_resources(stack: str, config: dict[str, str]) -> list[dict[str, str]]:
    from skyc.stacks.pulumi_preview import run_program

    source = (Path.cwd() / "__main__.py").read_text()
    values = {k.split(":", 1)[1]: v for k, v in config.items()}
    return [{"urn": r.urn, "type": r.type} for r in run_program(source, stack=stack,
                                                                   config=values)]


class _Events:
    def __init__(self, path: str | None) -> None:
        self.path, self.seq = path, 0

    def emit(self, **event: Any) -> None:
        if self.path is None:
            return
        line = {"sequence": self.seq, "timestamp": int(time.time()), **event}
        self.seq += 1
        with open(self.path, "a") as fh:
            fh.write(json.dumps(line) + "\n")

    def step(self, kind: str, op: str, resource: dict[str, str]) -> None:
        meta = {"op": op, "urn": resource["urn"], "type": resource["type"], "provider": ""}
        self.emit(**{kind: {"metadata": meta}})

    def summary(self, counts: dict[str, int]) -> None:
        self.emit(summaryEvent={"maybeCorrupt": False, "durationSeconds": 1,
                                "resourceChanges": counts, "PolicyPacks": {}})


def _record(entry: dict[str, Any]) -> None:
    log = os.environ.get("STANDIN_LOG")
    if log:
        with open(log, "a") as fh:
            fh.write(json.dumps({**entry, "pid": os.getpid()}) + "\n")


def _on_sigint() -> threading.Event:
    """Set on SIGINT (recorded), as the real CLI's first Ctrl-C cancels the update."""
    cancelled = threading.Event()

    def handle(signum: int, frame: Any) -> None:
        _record({"signal": "SIGINT"})
        cancelled.set()

    signal.signal(signal.SIGINT, handle)
    return cancelled


def _finish(stack: str, state: dict[str, Any], op: str, counts: dict[str, int],
            result: str) -> None:
    state["history"].append({"kind": op, "result": result, "resourceChanges": counts})
    _save(stack, state)


def _update(args: list[str], stack: str, op: str) -> int:
    cancelled = _on_sigint()
    slow = float(os.environ.get("STANDIN_SLOW_UP") or 0) if op == "up" else 0.0
    state = _load(stack)
    events = _Events(_flag(args, "--event-log"))
    events.emit(preludeEvent={"config": state["config"]})
    known = {r["urn"] for r in state["resources"]}
    if op == "destroy":
        wanted: list[dict[str, str]] = []
    elif op == "refresh":
        wanted = state["resources"]
    else:
        wanted = _program_resources(stack, state["config"])
    counts: dict[str, int] = {}
    steps = [(r, "same" if r["urn"] in known else "create") for r in wanted]
    if op == "refresh":
        steps = [(r, "refresh") for r in wanted]
    steps += [(r, "delete") for r in state["resources"]
              if r["urn"] not in {w["urn"] for w in wanted}]
    failure = os.environ.get("STANDIN_FAIL") if op == "up" else None
    failing_type = os.environ.get("STANDIN_FAIL_TYPE", "aws:ec2/instance:Instance")
    # the first instance by name (the mock runtime registers resources in any order)
    failing = min((r["urn"] for r in wanted if r["type"] == failing_type), default=None)
    done: list[dict[str, str]] = [r for r in state["resources"]]
    for resource, step in steps:
        if cancelled.is_set():   # the first Ctrl-C: nothing new starts
            state["resources"] = done
            _finish(stack, state, op, counts, "failed")
            events.summary(counts)
            events.emit(cancelEvent={})
            print("error: update canceled", file=sys.stderr)
            return 255
        counts[step] = counts.get(step, 0) + 1
        events.step("resourcePreEvent", step, resource)
        if failure and resource["urn"] == failing:
            events.emit(diagnosticEvent={"message": failure + "\n", "color": "never",
                                         "severity": "error", "urn": resource["urn"]})
            events.step("resOpFailedEvent", step, resource)
            events.summary(counts)
            events.emit(cancelEvent={})
            print(f"error: update failed: {failure}", file=sys.stderr)
            return 255
        cloud = not resource["type"].startswith(("pulumi:pulumi:", "pulumi:providers:"))
        end = time.monotonic() + (slow if step == "create" and cloud else 0.0)
        while time.monotonic() < end and not cancelled.is_set():
            time.sleep(0.05)   # (the signal handler runs in between); then it completes
        if op != "preview":
            events.step("resOutputsEvent", step, resource)
            if step == "create":
                done.append(resource)
    events.summary(counts)
    if op in ("up", "destroy", "refresh"):
        state["resources"] = [r for r, s in steps if s != "delete"]
        source = (Path.cwd() / "__main__.py").read_text()
        exports = re.findall(r'^pulumi\.export\("([^"]+)"', source, re.M)
        state["outputs"] = {} if op == "destroy" else (
            {name: f"<{name}>" for name in exports} if op == "up" else state["outputs"])
        _finish(stack, state, op, counts, "succeeded")
    events.emit(cancelEvent={})
    print(f"{op}: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    return 0


def main(argv: list[str]) -> int:
    log = os.environ.get("STANDIN_LOG")
    if log:
        with open(log, "a") as fh:
            env = {k: v for k, v in os.environ.items() if k.startswith("PULUMI_")}
            fh.write(json.dumps({"argv": argv, "cwd": os.getcwd(), "env": env,
                                 "pid": os.getpid()}) + "\n")
    args = [a for a in argv if a not in ("--non-interactive",)]
    stack = _flag(args, "--stack") or ""
    if not args or args[0] == "version":
        print(VERSION)
        return 0
    if args[:2] in (["stack", "select"], ["stack", "init"]):
        name = _flag(args, "--stack") or args[2]
        state = _load(name)
        if args[1] == "select" and "--create" not in args and not _state_file(name).exists():
            print(f"error: no stack named '{name}' found", file=sys.stderr)
            return 255
        _save(name, state)
        return 0
    if args[:2] == ["config", "set-all"]:
        state = _load(stack)
        for i, arg in enumerate(args):
            if arg in ("--plaintext", "--secret"):
                key, _, value = args[i + 1].partition("=")
                state["config"][key] = value
        _save(stack, state)
        return 0
    if args[:2] == ["stack", "output"]:
        print(json.dumps(_load(stack)["outputs"]))
        return 0
    if args[:2] == ["stack", "history"]:
        history = [{"version": i + 1, "kind": h["kind"], "startTime": "2026-01-01T00:00:00.000Z",
                    "message": "", "environment": {}, "config": {}, "result": h["result"],
                    "endTime": "2026-01-01T00:00:01.000Z", "resourceChanges": h["resourceChanges"]}
                   for i, h in enumerate(_load(stack)["history"])]
        print(json.dumps(list(reversed(history))[:1]))
        return 0
    if args[:2] == ["stack", "export"]:
        resources = _load(stack)["resources"]
        print(json.dumps({"version": 3, "deployment": {"resources": resources}}))
        return 0
    if args[0] in ("preview", "up", "refresh", "destroy"):
        return _update(args, stack, args[0])
    print(f"error: the stand-in does not answer {' '.join(args)}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))


def install(directory: Path) -> Path:
    """An executable ``<directory>/bin/pulumi`` running this stand-in; returns ``directory``
    (the root ``PulumiCommand(root=...)`` and ``$SKYC_PULUMI_ROOT`` take)."""
    bin_dir = directory / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    root = Path(__file__).resolve().parents[2]
    script = bin_dir / "pulumi"
    script.write_text(f"#!/bin/sh\nPYTHONPATH={root} exec {sys.executable} "
                      f"{Path(__file__).resolve()} \"$@\"\n")
    script.chmod(0o755)
    return directory
