"""Reading Pulumi's engine events: progress steps, typed changes, neutral diagnostics.

Each function takes one ``pulumi.automation.events.EngineEvent`` (duck-typed,
so nothing here imports pulumi) and returns None for events of no interest.
"""

from __future__ import annotations

import re
from typing import Any

from skyc.model.diagnostics import Diagnostic
from skyc.stacks.engine import Action, ProgressEvent, RefreshedResource, ResourceChange

ENGINE = "pulumi"
_WRAPPER = re.compile(r"(error: )?\d+ errors? occurred:?")

_ACTIONS: dict[str, Action] = {
    "same": "no-op", "create": "create", "update": "update", "delete": "delete",
    "replace": "replace", "read": "read", "refresh": "read", "import": "create",
}
# Steps a replacement is reported as, besides its "replace" step.
_REPLACE_PARTS = {"create-replacement", "delete-replaced", "discard-replaced",
                  "read-replacement", "import-replacement", "remove-pending-replace"}


def _op(metadata: Any) -> str:
    op = getattr(metadata, "op", "")
    return str(getattr(op, "value", op))


def _resource_urn(urn: str | None) -> bool:
    return bool(urn) and "::pulumi:pulumi:Stack::" not in str(urn) and \
        "::pulumi:providers:" not in str(urn)


def change(event: Any) -> ResourceChange | None:
    """A planned change, from a preview's resource-pre event."""
    pre = getattr(event, "resource_pre_event", None)
    if pre is None:
        return None
    meta = pre.metadata
    op = _op(meta)
    if op in _REPLACE_PARTS or not _resource_urn(meta.urn):
        return None
    action = _ACTIONS.get(op)
    if action is None:
        return None
    return ResourceChange(address=str(meta.urn), type=str(meta.type), action=action)


def progress(event: Any) -> ProgressEvent | None:
    """A live progress step of ``up`` / ``destroy``."""
    pre = getattr(event, "resource_pre_event", None)
    if pre is not None and _resource_urn(pre.metadata.urn) and _op(pre.metadata) != "same":
        return ProgressEvent(kind="start", address=_name(pre.metadata.urn),
                             action=_op(pre.metadata))
    done = getattr(event, "res_outputs_event", None)
    if done is not None and _resource_urn(done.metadata.urn) and _op(done.metadata) != "same":
        return ProgressEvent(kind="complete", address=_name(done.metadata.urn),
                             action=_op(done.metadata))
    failed = getattr(event, "res_op_failed_event", None)
    if failed is not None:
        return ProgressEvent(kind="errored", address=_name(failed.metadata.urn),
                             action=_op(failed.metadata))
    summary = getattr(event, "summary_event", None)
    if summary is not None:
        counts = {str(getattr(k, "value", k)): v for k, v in summary.resource_changes.items()}
        text = ", ".join(f"{n} {op}" for op, n in sorted(counts.items()))
        return ProgressEvent(kind="summary", elapsed_s=float(summary.duration_seconds),
                             message=text)
    return None


def _name(urn: str) -> str:
    """``type::name`` of a URN, as the progress display shows it."""
    parts = str(urn).split("::")
    return "::".join(parts[-2:]) if len(parts) >= 2 else str(urn)


def diagnostic(event: Any) -> Diagnostic | None:
    """An error the engine reported, as a neutral Diagnostic (the URN as address)."""
    diag = getattr(event, "diagnostic_event", None)
    if diag is None or str(diag.severity) != "error":
        return None
    # The provider's errors come wrapped: "1 error occurred:", then "* <error>" lines.
    lines = [line.strip().removeprefix("* ").strip()
             for line in str(diag.message).strip().splitlines()]
    lines = [line for line in lines if line and not _WRAPPER.fullmatch(line)]
    if not lines:
        return None
    return Diagnostic(engine=ENGINE, summary=lines[0].strip(),
                      detail="\n".join(lines[1:]).strip(), address=diag.urn or None)


def resource_urns(deployment: Any) -> set[str]:
    """URNs of the resources (not the stack, not providers) in an exported deployment."""
    doc = getattr(deployment, "deployment", deployment) or {}
    return {str(r["urn"]) for r in doc.get("resources") or [] if _resource_urn(r.get("urn"))}


def refreshed_resources(deployment: Any) -> list[RefreshedResource]:
    """The resources of an exported deployment with their outputs, as last read."""
    doc = getattr(deployment, "deployment", deployment) or {}
    return sorted(
        (RefreshedResource(address=str(r["urn"]), type=str(r.get("type") or ""),
                           values=dict(r.get("outputs") or {}))
         for r in doc.get("resources") or [] if _resource_urn(r.get("urn"))),
        key=lambda r: r.address,
    )


def describe(event: Any) -> dict[str, Any]:
    """The event as a JSON-able dict, for the run's log."""
    out: dict[str, Any] = {"sequence": getattr(event, "sequence", None)}
    for field in ("diagnostic_event", "resource_pre_event", "res_outputs_event",
                  "res_op_failed_event", "summary_event", "stdout_event"):
        value = getattr(event, field, None)
        if value is None:
            continue
        meta = getattr(value, "metadata", None)
        out[field] = {
            "urn": getattr(meta, "urn", None) if meta else getattr(value, "urn", None),
            "op": _op(meta) if meta else None,
            "message": str(getattr(value, "message", "") or "").strip() or None,
        }
    return out
