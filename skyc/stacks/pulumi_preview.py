"""The offline preview: a generated Pulumi program run under Pulumi's own mock runtime.

No CLI, no provider plugin and no cloud are involved: ``pulumi.runtime.set_mocks``
answers every resource registration with its inputs plus its ``name`` (without
the name, references such as a resource group's ``name`` resolve to nothing and
dependent inputs silently vanish), and the program's outputs are awaited through
``pulumi.runtime.test`` so an exception raised inside an output is not lost. The
real SDK classes still check every keyword argument and every typed ``*Args``
class, so a misspelt argument fails here. Every resource is reported as a
``create`` with its type token and inputs.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from typing import Any

from skyc.errors import EngineError, SkycError
from skyc.model.stack import Stack
from skyc.stacks.engine import ResourceChange, StackDiff
from skyc.stacks.pulumi_python import PROGRAM_FILE, PROJECT, program


class RecordedResource:
    """One resource as the program registered it."""

    def __init__(self, urn: str, type_token: str, name: str, inputs: dict[str, Any]) -> None:
        self.urn, self.type, self.name, self.inputs = urn, type_token, name, inputs


def _plain(value: Any) -> Any:
    """Inputs as JSON (unknowns and secrets as they print)."""
    return json.loads(json.dumps(value, sort_keys=True, default=str))


def _as_state(inputs: dict[str, Any]) -> dict[str, Any]:
    """A resource's state as the cloud would answer it, from its inputs: the inputs,
    except where the answer has another shape (azure-native: a resource's user-assigned
    identities are given as a list of ids and answered as a map by id)."""
    state = dict(inputs)
    identity = state.get("identity")
    if isinstance(identity, dict) and isinstance(identity.get("userAssignedIdentities"), list):
        state["identity"] = {**identity, "userAssignedIdentities": {
            str(i): {} for i in identity["userAssignedIdentities"]}}
    return state


# The mock runtime's settings are the process's: one program runs at a time.
_RUNNING = threading.Lock()


def run_program(
    source: str, *, stack: str, config: dict[str, str] | None = None,
) -> list[RecordedResource]:
    """Run a program's source under the mock runtime; the resources it registered.

    Raises EngineError for any exception the program (or one of its outputs) raised.
    Safe from any thread (a managed job's controller is one): runs are serialised, and
    a thread without an event loop gets one for the run.
    """
    with _RUNNING, _event_loop():
        return _run_program(source, stack=stack, config=config)


@contextlib.contextmanager
def _event_loop() -> Iterator[None]:
    """This thread's event loop, or a new one for the ``with`` body."""
    import asyncio

    try:
        asyncio.get_event_loop_policy().get_event_loop()
    except RuntimeError:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        try:
            yield
        finally:
            asyncio.set_event_loop(None)
            loop.close()
        return
    yield


def _run_program(
    source: str, *, stack: str, config: dict[str, str] | None,
) -> list[RecordedResource]:
    import pulumi
    import pulumi.runtime

    recorded: list[RecordedResource] = []

    class _Mocks(pulumi.runtime.Mocks):
        def new_resource(self, args: Any) -> tuple[str, dict[str, Any]]:
            urn = f"urn:pulumi:{stack}::{PROJECT}::{args.typ}::{args.name}"
            recorded.append(RecordedResource(urn, args.typ, args.name, dict(args.inputs)))
            return f"{args.name}-id", {"name": args.name, **_as_state(args.inputs)}

        def call(self, args: Any) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
            return {}, None

    pulumi.runtime.set_mocks(_Mocks(), project=PROJECT, stack=stack, preview=True)
    pulumi.runtime.set_all_config({f"{PROJECT}:{k}": v for k, v in (config or {}).items()})
    code = compile(source, PROGRAM_FILE, "exec")

    def _run() -> Any:
        namespace: dict[str, Any] = {"__name__": "__main__"}
        exec(code, namespace)
        outputs = [v for v in namespace.values() if isinstance(v, pulumi.Output)]
        resources = [v for v in namespace.values() if isinstance(v, pulumi.Resource)]
        return pulumi.Output.all(*outputs, *(r.urn for r in resources))

    awaited: Any = pulumi.runtime.test  # runs the function, then awaits its outputs
    try:
        awaited(_run)()
    except SkycError:
        raise
    except Exception as exc:
        raise EngineError(
            f"stack {stack}: the Pulumi program failed under the mock runtime: "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    urns = [r.urn for r in recorded]
    duplicates = sorted({u for u in urns if urns.count(u) > 1})
    if duplicates:
        raise EngineError(f"stack {stack}: duplicate resources: {', '.join(duplicates)}")
    return recorded


def preview(stack: Stack, values: dict[str, Any] | None = None) -> StackDiff:
    """What applying the stack with Pulumi would create, computed offline."""
    config = {name: str((values or {}).get(name, f"<{name}>")) for name in stack.variables}
    recorded = run_program(program(stack), stack=stack.name, config=config)
    changes = [
        ResourceChange(address=r.urn, type=r.type, action="create", inputs=_plain(r.inputs))
        for r in recorded
    ]
    return StackDiff(changes=sorted(changes, key=lambda c: c.address), offline=True)
