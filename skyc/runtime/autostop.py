"""Autostop on the nodes: the node agent's daemon decides, on the node itself, when the
cluster has been idle long enough, and runs the action it was given.

Which action, by what the target can do (never by its name):

- nodes that are processes of this machine (``local``): the head runs ``skyc destroy``
  here, which ends the jobs, destroys the stack and records it; there is nothing to
  stop, so autostop on them must be ``down``;
- targets with ``stop_start`` (their instances stop on a guest shutdown): every node
  runs ``shutdown -h now`` itself when it is idle; the instance's shutdown behaviour
  declared in its stack makes that a stop;
- anything else (SSH pools: machines skyc does not own) is refused.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import sys
from dataclasses import dataclass
from typing import Any

from skyc.errors import RuntimeAgentError, UnsupportedFeature
from skyc.model.nodes import ClusterInfo
from skyc.runtime.boot import run_waiting
from skyc.runtime.boot_record import BootWait, WaitCallback, plan_boot
from skyc.runtime.run import CONNECT_TIMEOUT
from skyc.runtime.session import ClusterSession

_PASSED_ON = ("SKYC_HOME", "PYTHONPATH", "PATH", "SKYC_TERRAFORM", "SKYC_TF_PLUGIN_DIR",
              "HOME", "TF_PLUGIN_CACHE_DIR")


@dataclass(frozen=True)
class AutostopPlan:
    action: str          # the shell command a node runs once idle
    every_node: bool     # set on every node (each stops itself) or on the head only


def plan_autostop(info: ClusterInfo, *, down: bool, stop_start: bool,
                  creates_resources: bool) -> AutostopPlan:
    """What autostop runs on the cluster's nodes (what the target cannot carry out is
    refused before, by :func:`skyc.apply.preflight.check_autostop`)."""
    if all(n.transport == "local" for n in info.nodes):
        env = " ".join(f"{k}={shlex.quote(os.environ[k])}" for k in _PASSED_ON
                       if k in os.environ)
        command = (f"exec env {env} {shlex.quote(sys.executable)} -m skyc destroy "
                   f"{shlex.quote(info.name)} --yes")
        return AutostopPlan(action=command, every_node=False)
    if not stop_start:
        raise UnsupportedFeature(f"cluster {info.name}: this target cannot stop instances; "
                                 "autostop is not available on it yet")
    return AutostopPlan(action="sudo -n shutdown -h now || shutdown -h now", every_node=True)


async def _each(info: ClusterInfo, every_node: bool, args: str,
                payload: bytes | None, boot: BootWait | None = None) -> list[dict[str, Any]]:
    async with ClusterSession(info, num_nodes=None if every_node else 1) as session:
        await session.open(CONNECT_TIMEOUT, boot=boot)

        async def one(agent: Any) -> dict[str, Any]:
            res = await agent.call(args, stdin=payload, timeout=60)
            if res.exit_code != 0:
                raise RuntimeAgentError(
                    f"node {agent.name}: autostop failed: "
                    f"{res.stderr.decode(errors='replace').strip()[-500:]}")
            doc: dict[str, Any] = json.loads(res.stdout.decode())
            return doc

        return list(await asyncio.gather(*(one(a) for a in session.agents)))


def set_autostop(info: ClusterInfo, plan: AutostopPlan, *, idle_minutes: float,
                 down: bool, wait_for: str | None = None,
                 on_wait: WaitCallback | None = None) -> None:
    """Start (or replace) the autostop daemon on the nodes (new nodes are waited for as
    by :func:`skyc.runtime.run_job`, with progress to ``on_wait``)."""
    spec = {"idle_seconds": max(0.0, idle_minutes * 60.0), "wait_for": wait_for,
            "down": down, "action": plan.action}
    boot = plan_boot(info, on_wait)
    run_waiting(_each(info, plan.every_node, "autostop set", json.dumps(spec).encode(), boot),
                boot)


def cancel_autostop(info: ClusterInfo) -> None:
    """Stop the autostop daemon on every node (it ends at its next check)."""
    asyncio.run(_each(info, True, "autostop cancel", b""))


def autostop_state(info: ClusterInfo) -> dict[str, Any]:
    """The head's autostop record: its setting, and whether it has fired."""
    return asyncio.run(_each(info, False, "autostop status", b""))[0]
