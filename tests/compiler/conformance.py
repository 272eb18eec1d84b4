"""What every target must hold, checked at run time for any registered target (mypy
checks the built-in ones' parts against the same protocols)."""

from __future__ import annotations

import inspect
from typing import Any

from skyc.compiler.contract import (
    CredentialsModule,
    Errors,
    Lowering,
    Outputs,
    OwnOffers,
    Power,
    SshProxy,
    Storage,
    Target,
)

# Each part's method (or, for an optional part, the method it names) and its protocol.
PARTS: dict[str, Any] = {
    "lowering": Lowering, "errors": Errors, "outputs": Outputs,
    "credentials": CredentialsModule, "power": Power, "own_offers": OwnOffers,
    "ssh_proxy": SshProxy, "storage": Storage,
}
OPTIONAL = ("power", "own_offers", "ssh_proxy", "storage")


def _members(protocol: Any) -> dict[str, Any]:
    return {name: value for name, value in vars(protocol).items()
            if not name.startswith("_") and callable(value)}


def _params(function: Any, drop_self: bool) -> list[str]:
    names = [p.name for p in inspect.signature(function).parameters.values()]
    return names[1:] if drop_self else names


def _takes(found: Any, wanted: Any) -> bool:
    """Whether ``found`` can be called as the protocol's ``wanted`` is: the same
    parameters first, any more of its own with defaults."""
    params = list(inspect.signature(found).parameters.values())
    names = _params(wanted, True)
    return ([p.name for p in params[:len(names)]] == names
            and all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
                    for p in params[len(names):]))


def part_problems(record: Target) -> list[str]:
    """Each part a record hands out that lacks one of its protocol's functions, or has
    it with other parameters."""
    out = []
    for method, protocol in PARTS.items():
        part = getattr(record, method)()
        if part is None:
            if method not in OPTIONAL:
                out.append(f"{method}: a required part is None")
            continue
        for name, wanted in _members(protocol).items():
            found = getattr(part, name, None)
            if found is None or not callable(found):
                out.append(f"{method}: has no {name}()")
            elif not _takes(found, wanted):
                out.append(f"{method}.{name}: parameters {_params(found, False)}, "
                           f"not {_params(wanted, True)}")
    return out
