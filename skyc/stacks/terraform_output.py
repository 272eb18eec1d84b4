"""Reading terraform's machine-readable output: plan JSON, ``-json`` UI lines
(progress events, diagnostics) and refresh drift."""

from __future__ import annotations

import json
from typing import Any

from skyc.errors import EngineError
from skyc.model.diagnostics import Diagnostic
from skyc.stacks.engine import ProgressEvent, RefreshedResource, ResourceChange

ENGINE = "terraform"


def _action(actions: list[str]) -> str:
    if actions in (["delete", "create"], ["create", "delete"]):
        return "replace"
    if len(actions) == 1 and actions[0] in ("create", "update", "delete", "no-op", "read"):
        return actions[0]
    raise EngineError(f"unknown change actions in plan: {actions}")


def parse_plan_json(doc: dict[str, Any]) -> list[ResourceChange]:
    """Resource changes from ``terraform show -json <plan>``."""
    changes = []
    for rc in doc.get("resource_changes") or []:
        action = _action(list(rc["change"]["actions"]))
        changes.append(ResourceChange(address=rc["address"], type=rc["type"], action=action))
    return sorted(changes, key=lambda c: c.address)


def event(msg: dict[str, Any]) -> ProgressEvent | None:
    """A progress event from one ``-json`` UI line, or None for lines of no interest."""
    kind = msg.get("type")
    hook = msg.get("hook") or {}
    address = (hook.get("resource") or {}).get("addr")
    mapping = {
        "apply_start": "start",
        "apply_progress": "progress",
        "apply_complete": "complete",
        "apply_errored": "errored",
        "provision_progress": "message",
    }
    if kind in mapping:
        return ProgressEvent(
            kind=mapping[kind],
            address=address,
            action=hook.get("action"),
            elapsed_s=hook.get("elapsed_seconds"),
            message=str(msg.get("@message", "")),
        )
    if kind == "change_summary":
        return ProgressEvent(kind="summary", message=str(msg.get("@message", "")))
    return None




def diagnostic(msg: dict[str, Any]) -> Diagnostic | None:
    """The neutral Diagnostic of one ``-json`` line, or None when it is not an error."""
    if msg.get("type") != "diagnostic" or msg.get("@level") != "error":
        return None
    diag = msg.get("diagnostic") or {}
    address = diag.get("address")
    return Diagnostic(
        engine=ENGINE,
        summary=str(diag.get("summary") or msg.get("@message") or ""),
        detail=str(diag.get("detail") or ""),
        address=str(address) if address else None,
    )


def drift_deleted(stdout: str) -> list[str]:
    """Addresses a refresh-only plan (``-json``) found deleted outside terraform."""
    gone: list[str] = []
    for line in stdout.splitlines():
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if not isinstance(msg, dict) or msg.get("type") != "resource_drift":
            continue
        change = msg.get("change") or {}
        if change.get("action") == "delete":
            gone.append(str((change.get("resource") or {}).get("addr")))
    return sorted(gone)


def managed_count(doc: dict[str, Any]) -> int:
    """Managed resources in ``terraform show -json`` of the state."""
    resources = ((doc.get("values") or {}).get("root_module") or {}).get("resources") or []
    return sum(1 for r in resources if r.get("mode") == "managed")


def refreshed_resources(doc: dict[str, Any]) -> list[RefreshedResource]:
    """The managed resources of a saved refresh-only plan (``terraform show -json``) as
    read back: its ``prior_state`` is the refreshed state, without what was deleted."""
    root = (((doc.get("prior_state") or {}).get("values") or {}).get("root_module")) or {}
    return sorted(
        (RefreshedResource(address=str(r["address"]), type=str(r["type"]),
                           values=dict(r.get("values") or {}))
         for r in root.get("resources") or [] if r.get("mode") == "managed"),
        key=lambda r: r.address,
    )
